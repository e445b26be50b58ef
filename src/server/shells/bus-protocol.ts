// Shell traffic on the bus, keyed by shell id, so the instance that owns a shell's PTY and the
// instance holding a browser's socket may differ.
//
// shell.{id}.in   front → owner   attach {v, u, from} | detach {v} | keep {v} | input (data)
//                                 | resize {cols, rows} | ack {v, o} | close {applyId, reason}
//                                 | fetch {v, from, max}
//                                 joined shells: attach also {g: 1 (a checked guest), n (username)};
//                                 input {v} (dropped unless v may type) | grant {u, input}
//                                 | kickUser {u, reason} | kickGuests {reason} | describe {r}
//                                 | job {r, applyId} (is a foreground job running; owner's apply only)
// shell.{id}.out  owner → fronts  data {o} (data) | replay {v, o, lost} (data) | refused {v, key}
//                                 | catchup {v, o, lost, end} (data) | exit {reason, code}
//                                 | kick {v, reason} | presence {shellId, users} | meta {r, userId, ...}
//                                 | jobState {r, state, command}
// rt.ctl          anyone → all    closeApply {applyId, reason} | closeBoard {deviceId, reason}
//                                 | endSessions {ids?, userId?, code, key, message}
//                                 | kickGuest {userId, deviceId, reason}
//
// `fetch` asks for at most `max` bytes of the ring from `from` for a viewer whose socket could not
// take them when they were produced; `catchup` answers them (`end`: the ring's end then). `endSessions`
// ends the sign-ins with the credential ids `ids` (or every sign-in of `userId`): fronts close the
// connections authenticated with them, owners close the shells opened with them.
//
// `v` is a viewer id: one per STOMP subscription to a shell. Output is broadcast to every viewer;
// a replay is addressed to one viewer, which drops live output until its replay arrives and then
// drops what the replay already covered (offsets make this exact).

export const shellIn = (id: string) => `shell.${id}.in`;
export const shellOut = (id: string) => `shell.${id}.out`;
export const CONTROL_CHANNEL = 'rt.ctl';
export const userChannel = (userId: string) => `user.${userId}`;
export const boardChannel = (deviceId: string) => `board.${deviceId}`;

/** How often a front tells an owner its viewers are alive, and when an owner forgets a silent one. */
export const VIEWER_KEEPALIVE_MS = 20_000;
export const VIEWER_STALE_MS = 70_000;
/** How long a front waits for an owner to answer an attach or a close. */
export const OWNER_ANSWER_TIMEOUT_MS = 5_000;
/** How long an ended shell stays around so that a reconnecting console still gets its last output. */
export const ENDED_SHELL_KEEP_MS = 5 * 60_000;
