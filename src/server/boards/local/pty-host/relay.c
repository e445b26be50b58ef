/*
 * The service's WebSocket relay (docs/native-data-plane.md): one process per service, on the host,
 * that sits between the clients of /ws and the service, so that a keystroke and its echo do not pass
 * through the service's JavaScript.
 *
 * The service listens and upgrades as before; for a plain TCP client it connects to this process's
 * unix socket (argv[1], made here, only the parent accepted), sends "relay <fd>\n" and runs its
 * WebSocket over that connection. This process takes the client's socket (descriptor <fd> of the
 * service, with pidfd_getfd) and from then on is the only one to read and write it: it copies the
 * service's bytes to the client and the client's to the service, frame by frame (it reads frame heads
 * only to know where frames end).
 *
 * A shell view the service names with "serve" is served here: a client frame that is exactly one STOMP
 * SEND to the view's input destination is written to the view's terminal and not passed on; the
 * terminal is read here and its output written to the client as MESSAGE frames with the view's head
 * (the service's own headers), and the same bytes right after to the service on descriptor 4 (frames
 * of protocol.ts FromCtl, as ctl.c sends), for its ring and its other viewers. Acknowledgements of a
 * served view are noted here (its window) and passed on.
 *
 * Requests are lines on stdin, answered in order on stdout, "ok" or "err <why>":
 *   serve <conn> <id> <fd> <offset> <head> <input> <ack> <written> <read>
 *                         serve view <id> on connection <conn> (the service's descriptor number of
 *                         the client socket): its terminal is the service's master <fd>, its next
 *                         byte is at <offset>; <head> is the constant head of its MESSAGE frames and
 *                         <input>, <ack> its destinations as they stand in frames, each hex-encoded.
 *                         <written>: bytes the service has written on the connection so far — its
 *                         last frames for the view are among them, and the view's output follows them.
 *                         <read>: bytes it has read and handled — a keystroke taken here must not
 *                         pass one on its way to the service, so "err busy" while any is (ask again)
 *   unserve <id>          stop serving the view (the service reads the terminal again) once the
 *                         input taken for it is in the terminal: nothing the client sends after it
 *                         (through the service) can pass it; "released" says when
 *   drop <id>             the same at once, its input with it (the terminal is ending)
 *   pause <id> / resume <id>
 *                         stop / start reading its terminal (the service's flow control)
 *   stats                 "ok <connections> <views served> <keystroke frames taken> <MESSAGEs written>"
 * A view whose client goes away is given back with a "released" frame, after "typed" frames with the
 * input the terminal had not taken yet (the service writes it on); one whose terminal ends, with
 * "ended", after its last output. A receipt asked with input goes to the service (which answers it)
 * once the terminal took that input: a relay that ends holding input gives no receipt for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "helper.h"

/* Output read from a terminal and sent as one frame, at most. */
#define GATHER (64 * 1024)
/* A read this long means more is coming: read again before sending. */
#define FULL_READ 4095
/*
 * While a shell streams, output is gathered into larger frames, as the service does (coalesce.ts): a
 * chunk read within WINDOW_US of a frame of BURST bytes or more is held for up to FLUSH_US (or until
 * GATHER bytes wait). A keystroke's echo follows nothing or a small frame: it is never held.
 */
#define BURST 1024
#define WINDOW_US 2000
#define FLUSH_US 1000
/* A served view's output not yet acknowledged, at most (the service's SHELL_FLOW window). */
#define WINDOW (256 * 1024)
/* Bytes held for one client (the service's frames and ours): past this, nothing more is read for it. */
#define OUT_LIMIT (1024 * 1024)
/*
 * A client frame this long or shorter is looked at whole: it may be input for a served view. It is the
 * service's largest STOMP frame (stomp-limits.ts; `ws` closes a connection that sends a longer one), so
 * that every piece of a served view's input takes the same way: one large paste through the service
 * and its small tail through here would reach the terminal out of order.
 */
#define LOOK_MAX (256 * 1024)
/* Bytes of a client's held for the service: past this, the client is not read. */
#define IN_LIMIT (2 * LOOK_MAX)
/* Input for a terminal that it has not taken yet, at most (the service's MAX_UNREAD_INPUT). */
#define INPUT_LIMIT (8 * 1024 * 1024)
/* Input held for a terminal past which the client is not read until the terminal took it (the
   service's SHELL_INPUT_HELD.high): below it the client's other frames (heart-beats, pongs,
   acknowledgements) still flow while a program reads late. */
#define INPUT_HOLD (1024 * 1024)
/* While a client is not read for that, its heart-beats wait in its socket: the relay sends the
   service one of its own so often, so that the service does not take the silence for a client gone
   (as the service's own path excuses it while it holds input). */
#define HELD_BEAT_US 500000
/* Receipts held for input the terminal has not taken (their frames' bytes, per view): past this the
   client is not read until the terminal takes input (as for INPUT_HOLD), so that a client asking
   receipts without end (a bodiless SEND is input of nothing) does not grow the relay's memory; past
   the limit (a client the relay may not hold: its output waits for acknowledgements behind), a
   receipt is dropped, never answered, as input past INPUT_LIMIT is. */
#define RECEIPTS_HOLD (64 * 1024)
#define RECEIPTS_LIMIT (1024 * 1024)

struct buf {
  char *p;
  size_t off, len, cap; /* bytes held are p[off .. off+len) */
};

static void buf_need(struct buf *b, size_t more) {
  if (b->off + b->len + more <= b->cap) return;
  if (b->off) {
    memmove(b->p, b->p + b->off, b->len);
    b->off = 0;
    if (b->len + more <= b->cap) return;
  }
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) _exit(70);
  b->p = p;
  b->cap = cap;
}

static void buf_put(struct buf *b, const void *s, size_t n) {
  buf_need(b, n);
  memcpy(b->p + b->off + b->len, s, n);
  b->len += n;
}

static void buf_take(struct buf *b, size_t n) {
  b->off += n;
  b->len -= n;
  if (!b->len) b->off = 0;
}

static void buf_free(struct buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

enum kind { K_LISTEN, K_STDIN, K_CLIENT, K_SERVICE, K_TERM };
struct tag {
  enum kind kind;
  void *of;
};

struct conn;
/*
 * A receipt asked with input that the terminal had not all taken: the service gets its frame (and
 * answers it) once the terminal took that input, so that a receipt means what a client counts on, the
 * input in the terminal. A relay that ends holding input takes it with it, and gives no receipt for it.
 */
struct held_receipt {
  uint64_t at; /* the view's `taken` once its input is in */
  size_t len;
  struct held_receipt *next;
  char frame[];
};
struct view {
  uint32_t id;
  int fd;
  int paused, ended;
  int releasing; /* asked to unserve while input waits: given back once the terminal took it */
  uint64_t sent, acked; /* absolute offsets: next byte to send; highest acknowledgement */
  uint64_t start_after; /* the terminal is read once this much of the service's bytes went to the client */
  struct buf head;      /* "MESSAGE\nsubscription:..\ndestination:..\ncontent-type:..\n" */
  char *input, *ack;    /* destinations, as in frames */
  size_t input_len, ack_len;
  struct buf typed; /* input the terminal has not taken yet */
  uint64_t taken;   /* bytes of `typed` the terminal took, ever */
  struct held_receipt *receipts, **receipts_end; /* oldest first; where the next goes */
  size_t receipt_bytes;          /* their frames' */
  char *gathered;   /* output read and held (GATHER bytes), `got` of them */
  size_t got, last_bytes;
  int64_t first_us, last_us; /* when the held output began; when the last frame went */
  struct conn *conn;
  struct view *next;
  struct tag tag;
  uint32_t events;
  int dead; /* dropped in this turn: freed at its end */
};

struct conn {
  int key; /* the service's descriptor number of the client socket; -1 until "relay" */
  int cfd, sfd;
  int s_http; /* the service's 101 response is still being copied */
  struct buf from_client, to_service, from_service, to_client, ours;
  uint64_t c_copy, s_copy; /* bytes of the current frame still to copy as they are */
  uint64_t s_read, s_written; /* bytes read from the service's connection and written to it */
  uint64_t seq;
  int64_t beat_due; /* held: when the service gets the next heart-beat in the client's place (0: not held) */
  struct view *views;
  struct conn *next;
  struct tag ctag, stag;
  uint32_t cev, sev;
  int dead;
};

static int service, ep;
static struct conn *conns;
static struct view *graveyard;
static uint32_t listen_ev, stdin_ev;
static struct tag tag_listen = {K_LISTEN, NULL}, tag_stdin = {K_STDIN, NULL};
static unsigned long long typed_frames, emitted_frames;
static char reqbuf[8192];
static size_t reqlen;


/* One frame, in one write: a keystroke's echo costs the relay one system call here, not two. */
static void send_mark(int type, uint32_t id, const char *data, size_t n) {
  static char f[HEADER + GATHER];
  f[0] = (char)type;
  put32(f + 1, id);
  put32(f + 5, (uint32_t)n);
  if (n) memcpy(f + HEADER, data, n);
  write_all(f, HEADER + n);
}

/* Not in the epoll set: a descriptor nothing is wanted of is taken out, or its hang-up would wake the
   loop for ever (EPOLLHUP cannot be masked). */
#define UNWATCHED UINT32_MAX

static void watch(int fd, struct tag *t, uint32_t *cur, uint32_t want) {
  if (*cur == want) return;
  struct epoll_event ev = {.events = want, .data.ptr = t};
  if (want == 0) {
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
    *cur = UNWATCHED;
    return;
  }
  epoll_ctl(ep, *cur == UNWATCHED ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
  *cur = want;
}

static void add(int fd, struct tag *t, uint32_t *cur, uint32_t events) {
  *cur = UNWATCHED;
  watch(fd, t, cur, events);
}

/* ---- views ---- */

static struct view *find_view(uint32_t id) {
  for (struct conn *c = conns; c; c = c->next)
    for (struct view *v = c->views; v; v = v->next)
      if (v->id == id) return v;
  return NULL;
}

static void flush_view(struct view *v, int64_t now);
static int64_t now_us(void);

static void forget_receipts(struct view *v) {
  while (v->receipts) {
    struct held_receipt *r = v->receipts;
    v->receipts = r->next;
    free(r);
  }
  v->receipt_bytes = 0;
}

static void drop_view(struct view *v, int mark) {
  struct conn *c = v->conn;
  flush_view(v, now_us()); /* what was held goes first: to the ring, and to a client still there */
  /* The client is gone (nothing it sent can come after this input): the service writes it on. */
  if (mark == CTL_RELEASED && c->dead)
    for (size_t at = 0; at < v->typed.len; at += GATHER) {
      size_t n = v->typed.len - at < GATHER ? v->typed.len - at : GATHER;
      send_mark(CTL_TYPED, v->id, v->typed.p + v->typed.off + at, n);
    }
  if (mark) send_mark(mark, v->id, NULL, 0);
  /* Input not taken (the terminal ends, or the service writes it on for a client gone): no receipt. */
  forget_receipts(v);
  watch(v->fd, &v->tag, &v->events, 0);
  close(v->fd);
  for (struct view **pp = &c->views; *pp; pp = &(*pp)->next)
    if (*pp == v) {
      *pp = v->next;
      break;
    }
  v->dead = 1;
  v->next = graveyard;
  graveyard = v;
}

static void bury(void) {
  while (graveyard) {
    struct view *v = graveyard;
    graveyard = v->next;
    buf_free(&v->head);
    buf_free(&v->typed);
    free(v->gathered);
    free(v->input);
    free(v->ack);
    free(v);
  }
}

static int flush(int fd, struct buf *b, uint64_t *count);

/* Our frames go to the client between the service's, never inside one. */
static void queue_ours(struct conn *c) {
  if (c->ours.len && c->s_copy == 0 && !c->s_http) {
    buf_put(&c->to_client, c->ours.p + c->ours.off, c->ours.len);
    buf_take(&c->ours, c->ours.len);
  }
}

/*
 * The head of a final binary WebSocket frame of `len` payload bytes into `out` (14 bytes at most): the
 * relay's own to the client, or, `masked`, to the service as the client's (a zero key: the payload as
 * it is). Its length.
 */
static size_t ws_head(unsigned char *out, uint64_t len, int masked) {
  size_t hl;
  out[0] = 0x82;
  if (len < 126) {
    out[1] = (unsigned char)len;
    hl = 2;
  } else if (len < 0x10000) {
    out[1] = 126, out[2] = (unsigned char)(len >> 8), out[3] = (unsigned char)len;
    hl = 4;
  } else {
    out[1] = 127;
    for (int i = 0; i < 8; i++) out[2 + i] = (unsigned char)(len >> (56 - 8 * i));
    hl = 10;
  }
  if (!masked) return hl;
  out[1] |= 0x80;
  memset(out + hl, 0, 4);
  return hl + 4;
}

/* One MESSAGE of `n` output bytes: the WebSocket head, the view's head, its own headers, the bytes, NUL. */
static void emit(struct view *v, const char *data, size_t n) {
  struct conn *c = v->conn;
  char tail[128];
  int tl = snprintf(tail, sizeof tail, "message-id:r%llu\noffset:%llu\ncontent-length:%zu\n\n",
                    (unsigned long long)++c->seq, (unsigned long long)v->sent, n);
  size_t len = v->head.len + (size_t)tl + n + 1;
  unsigned char wh[14];
  buf_put(&c->ours, wh, ws_head(wh, len, 0));
  buf_put(&c->ours, v->head.p + v->head.off, v->head.len);
  buf_put(&c->ours, tail, (size_t)tl);
  buf_put(&c->ours, data, n);
  buf_put(&c->ours, "", 1);
  v->sent += n;
  emitted_frames++;
  queue_ours(c);
  /* The client first (a keystroke's echo waits for nothing else), then the ring, right after: the
     bytes are in the service's pipe before anything else happens here, so a resume from any offset
     finds them. An acknowledgement that reaches the service first is bounded by the ring's end there. */
  if (c->cfd >= 0 && !c->dead && c->to_client.len) flush(c->cfd, &c->to_client, NULL);
  send_mark(CTL_DATA, v->id, data, n);
}

static int view_may_read(struct view *v) {
  struct conn *c = v->conn;
  return !v->paused && !v->ended && c->s_read >= v->start_after && v->sent - v->acked < WINDOW &&
         c->to_client.len < OUT_LIMIT && c->ours.len < OUT_LIMIT;
}

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void flush_view(struct view *v, int64_t now) {
  if (!v->got) return;
  emit(v, v->gathered, v->got);
  v->last_us = now;
  v->last_bytes = v->got;
  v->got = 0;
}

/*
 * Reads the terminal while it has output, up to GATHER; sends it at once unless the shell streams
 * (then it waits for more, FLUSH_US at most: the loop's timeout).
 */
static void read_view(struct view *v) {
  int64_t now = now_us();
  int end = 0;
  while (v->got < GATHER) {
    ssize_t n = read(v->fd, v->gathered + v->got, GATHER - v->got);
    if (n > 0) {
      if (!v->got) v->first_us = now;
      v->got += (size_t)n;
      if (n < FULL_READ) break;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      break;
    } else {
      end = 1; /* EIO (or 0): every process of the terminal has closed it */
      break;
    }
  }
  int streaming = v->last_bytes >= BURST && now - v->last_us < WINDOW_US;
  if (end || v->got >= GATHER || !streaming || now - v->first_us >= FLUSH_US) flush_view(v, now);
  if (end) {
    v->ended = 1;
    drop_view(v, CTL_ENDED);
  }
}

/*
 * Input for the terminal: written now as far as it takes it, the rest held (past INPUT_HOLD the client is
 * not read). 0 when it is dropped: past the bound, or the terminal ending.
 */
static int type_into(struct view *v, const char *p, size_t n) {
  if (v->typed.len) {
    if (v->typed.len + n > INPUT_LIMIT) return 0; /* as the service: input past the bound is dropped */
    buf_put(&v->typed, p, n);
    return 1;
  }
  while (n) {
    ssize_t w = write(v->fd, p, n);
    if (w > 0) {
      p += w, n -= (size_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && errno == EAGAIN) {
      buf_put(&v->typed, p, n);
      return 1;
    } else {
      return 0; /* EIO: the terminal's end is read as output */
    }
  }
  return 1;
}

/* The receipts whose input the terminal took go to the service, between the client's frames. */
static void release_receipts(struct view *v) {
  struct conn *c = v->conn;
  if (c->c_copy) return; /* inside one of the client's frames: after it (update) */
  while (v->receipts && v->receipts->at <= v->taken) {
    struct held_receipt *r = v->receipts;
    buf_put(&c->to_service, r->frame, r->len);
    v->receipts = r->next;
    v->receipt_bytes -= r->len;
    free(r);
  }
}

static void drain_typed(struct view *v) {
  while (v->typed.len) {
    ssize_t w = write(v->fd, v->typed.p + v->typed.off, v->typed.len);
    if (w > 0) {
      buf_take(&v->typed, (size_t)w);
      v->taken += (uint64_t)w;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else if (w < 0 && errno == EAGAIN) {
      break;
    } else {
      /* The terminal ends: what it did not take is dropped, with its receipts. */
      buf_take(&v->typed, v->typed.len);
      forget_receipts(v);
      break;
    }
  }
  release_receipts(v);
  if (v->releasing && !v->typed.len) drop_view(v, CTL_RELEASED);
}

/* ---- STOMP: a client frame that is one SEND to a served view ---- */

static int is_eol(const char *p, const char *e) { return p < e && (*p == '\n' || (*p == '\r' && p + 1 < e && p[1] == '\n')); }
static const char *skip_eol(const char *p) { return *p == '\r' ? p + 2 : p + 1; }

/*
 * A SEND taken here that asked for a receipt: the service gets the same frame without its body (masked
 * with a zero key, as a client frame must be), so that it answers the receipt as it would have — now if
 * the terminal took the input, else once it has (held_receipt).
 */
static void forward_receipt(struct view *v, const char *dest, size_t dl, const char *r, size_t rl) {
  if (dl > 1024 || rl > 1024) return;
  char payload[2200];
  int n = snprintf(payload, sizeof payload, "SEND\ndestination:%.*s\nreceipt:%.*s\n\n", (int)dl, dest, (int)rl, r);
  if (n < 0 || (size_t)n + 1 >= sizeof payload) return;
  size_t len = (size_t)n + 1; /* the NUL */
  unsigned char frame[14 + sizeof payload];
  size_t hl = ws_head(frame, len, 1);
  memcpy(frame + hl, payload, len);
  size_t fl = hl + len;
  if (!v->typed.len && !v->receipts) {
    buf_put(&v->conn->to_service, frame, fl);
    return;
  }
  if (v->receipt_bytes + fl > RECEIPTS_LIMIT) return;
  struct held_receipt *h = malloc(sizeof *h + fl);
  if (!h) _exit(70);
  h->at = v->taken + v->typed.len;
  h->len = fl;
  h->next = NULL;
  memcpy(h->frame, frame, fl);
  v->receipt_bytes += fl;
  if (!v->receipts) v->receipts_end = &v->receipts;
  *v->receipts_end = h;
  v->receipts_end = &h->next;
}

/*
 * Looks at one unmasked client message. Answers 1 when it was a SEND to a served view's input and its
 * body went to the terminal (the message is not passed on, or only its receipt); notes a served view's
 * acknowledgement.
 */
static int look(struct conn *c, const char *p, size_t n) {
  const char *e = p + n;
  while (is_eol(p, e)) p = skip_eol(p); /* heart-beats */
  if ((size_t)(e - p) < 5 || memcmp(p, "SEND", 4) != 0 || !is_eol(p + 4, e)) return 0;
  p = skip_eol(p + 4);
  const char *dest = NULL, *offset = NULL, *receipt = NULL;
  size_t dest_len = 0, offset_len = 0, receipt_len = 0;
  long long clen = -1;
  int dests = 0;
  for (;;) {
    if (p >= e) return 0;
    if (is_eol(p, e)) {
      p = skip_eol(p);
      break;
    }
    const char *nl = memchr(p, '\n', (size_t)(e - p));
    if (!nl) return 0;
    const char *le = nl > p && nl[-1] == '\r' ? nl - 1 : nl;
    const char *colon = memchr(p, ':', (size_t)(le - p));
    if (!colon) return 0;
    size_t kl = (size_t)(colon - p);
    const char *val = colon + 1;
    size_t vl = (size_t)(le - val);
    if (kl == 11 && memcmp(p, "destination", 11) == 0) {
      dests++;
      dest = val, dest_len = vl;
    } else if (kl == 7 && memcmp(p, "receipt", 7) == 0) {
      if (receipt) return 0;
      receipt = val, receipt_len = vl;
    } else if (kl == 14 && memcmp(p, "content-length", 14) == 0 && clen < 0) {
      clen = 0;
      for (size_t i = 0; i < vl; i++) {
        if (val[i] < '0' || val[i] > '9' || clen > LOOK_MAX) return 0;
        clen = clen * 10 + (val[i] - '0');
      }
    } else if (kl == 6 && memcmp(p, "offset", 6) == 0 && !offset) {
      offset = val, offset_len = vl;
    }
    p = nl + 1;
  }
  if (dests != 1) return 0;
  const char *body = p, *nul;
  if (clen >= 0) {
    if (clen >= e - body || body[clen] != 0) return 0;
    nul = body + clen;
  } else {
    nul = memchr(body, 0, (size_t)(e - body));
    if (!nul) return 0;
  }
  for (const char *q = nul + 1; q < e; q++)
    if (*q != '\n' && *q != '\r') return 0; /* one frame only */
  for (struct view *v = c->views; v; v = v->next) {
    if (dest_len == v->input_len && memcmp(dest, v->input, dest_len) == 0) {
      int kept = nul > body ? type_into(v, body, (size_t)(nul - body)) : 1;
      typed_frames++;
      if (receipt && kept) forward_receipt(v, dest, dest_len, receipt, receipt_len); /* the service answers it */
      return 1;
    }
    if (dest_len == v->ack_len && memcmp(dest, v->ack, dest_len) == 0 && offset) {
      unsigned long long o = 0;
      for (size_t i = 0; i < offset_len && i < 20; i++) {
        if (offset[i] < '0' || offset[i] > '9') return 0;
        o = o * 10 + (unsigned)(offset[i] - '0');
      }
      if (o <= v->sent && o > v->acked) v->acked = o;
      return 0; /* the service counts it too */
    }
  }
  return 0;
}

/* ---- connections ---- */

static void close_conn(struct conn *c) {
  if (c->dead) return;
  c->dead = 1;
  while (c->views) {
    struct view *v = c->views;
    drop_view(v, CTL_RELEASED);
  }
  if (c->cfd >= 0) {
    watch(c->cfd, &c->ctag, &c->cev, 0);
    close(c->cfd);
  }
  watch(c->sfd, &c->stag, &c->sev, 0);
  close(c->sfd);
}

static void free_dead(void) {
  for (struct conn **pp = &conns; *pp;) {
    struct conn *c = *pp;
    if (!c->dead) {
      pp = &c->next;
      continue;
    }
    *pp = c->next;
    buf_free(&c->from_client);
    buf_free(&c->to_service);
    buf_free(&c->from_service);
    buf_free(&c->to_client);
    buf_free(&c->ours);
    free(c);
  }
}

/* Length of a frame's head (2 to 14 bytes) and of its payload; 0 when the head is not all there. */
static size_t frame_head(const unsigned char *p, size_t n, uint64_t *plen, int *masked) {
  if (n < 2) return 0;
  size_t hl = 2;
  uint64_t l = p[1] & 0x7f;
  *masked = (p[1] & 0x80) != 0;
  if (l == 126) hl += 2;
  else if (l == 127) hl += 8;
  if (*masked) hl += 4;
  if (n < hl) return 0;
  if (l == 126) l = ((uint64_t)p[2] << 8) | p[3];
  else if (l == 127) {
    l = 0;
    for (int i = 0; i < 8; i++) l = (l << 8) | p[2 + i];
  }
  *plen = l;
  return hl;
}

/* The client's bytes: copied to the service frame by frame, a served view's keystrokes taken out. */
static void from_client(struct conn *c) {
  static char look_buf[LOOK_MAX];
  struct buf *b = &c->from_client;
  while (b->len) {
    if (c->c_copy) {
      size_t n = b->len < c->c_copy ? b->len : (size_t)c->c_copy;
      buf_put(&c->to_service, b->p + b->off, n);
      buf_take(b, n);
      c->c_copy -= n;
      continue;
    }
    const unsigned char *p = (const unsigned char *)b->p + b->off;
    uint64_t plen;
    int masked;
    size_t hl = frame_head(p, b->len, &plen, &masked);
    if (!hl) return;
    /* No client sends a frame this long (the service's limit is far below): the connection ends. */
    if (plen > ((uint64_t)1 << 40)) return close_conn(c);
    int op = p[0] & 0x0f;
    if (c->views && (p[0] & 0x80) && (op == 1 || op == 2) && masked && plen <= LOOK_MAX) {
      if (b->len < hl + plen) return; /* the whole message first */
      const unsigned char *key = p + hl - 4;
      for (size_t i = 0; i < plen; i++) look_buf[i] = (char)(p[hl + i] ^ key[i & 3]);
      if (look(c, look_buf, (size_t)plen)) {
        buf_take(b, hl + (size_t)plen);
        continue;
      }
    }
    c->c_copy = hl + plen;
  }
}

/* The service's bytes: its 101 response, then frames, copied to the client with ours between them. */
static void from_service(struct conn *c) {
  struct buf *b = &c->from_service;
  while (b->len) {
    if (c->s_http) {
      /* Copied up to the blank line ending the response's head. */
      const char *p = b->p + b->off;
      size_t n = b->len;
      const char *end = memmem(p, n, "\r\n\r\n", 4);
      size_t take = end ? (size_t)(end - p) + 4 : (n > 3 ? n - 3 : 0);
      if (!take) return;
      buf_put(&c->to_client, p, take);
      buf_take(b, take);
      if (end) {
        c->s_http = 0;
        queue_ours(c);
      }
      continue;
    }
    if (c->s_copy) {
      size_t n = b->len < c->s_copy ? b->len : (size_t)c->s_copy;
      buf_put(&c->to_client, b->p + b->off, n);
      buf_take(b, n);
      c->s_copy -= n;
      if (!c->s_copy) queue_ours(c);
      continue;
    }
    uint64_t plen;
    int masked;
    size_t hl = frame_head((const unsigned char *)b->p + b->off, b->len, &plen, &masked);
    if (!hl) return;
    c->s_copy = hl + plen;
  }
}

/* "relay <fd>\n", the service's first bytes on a connection: the client socket is taken. */
static int take_client(struct conn *c) {
  struct buf *b = &c->from_service;
  char *nl = memchr(b->p + b->off, '\n', b->len);
  if (!nl) return b->len < 64;
  *nl = 0;
  int fd;
  char extra;
  if (sscanf(b->p + b->off, "relay %d%c", &fd, &extra) != 1 || fd < 0) return 0;
  buf_take(b, (size_t)(nl - (b->p + b->off)) + 1);
  int cfd = getfd(service, fd);
  struct stat st;
  if (cfd < 0 || fstat(cfd, &st) < 0 || !S_ISSOCK(st.st_mode)) {
    if (cfd >= 0) close(cfd);
    return 0;
  }
  for (struct conn *o = conns; o; o = o->next)
    if (o != c && !o->dead && o->key == fd) close_conn(o); /* the service reused the number: that one ended */
  c->key = fd;
  c->cfd = cfd;
  add(cfd, &c->ctag, &c->cev, EPOLLIN);
  return 1;
}

/* A STOMP heart-beat (one EOL) to the service in a held client's place, between the client's frames. */
static void beat(struct conn *c, int64_t now) {
  static const unsigned char frame[] = {0x81, 0x81, 0, 0, 0, 0, '\n'}; /* text, masked (zero key), "\n" */
  c->beat_due = now + HELD_BEAT_US;
  if (c->c_copy) return; /* inside one of the client's frames: the next time */
  buf_put(&c->to_service, frame, sizeof frame);
  if (!flush(c->sfd, &c->to_service, &c->s_written)) close_conn(c);
}

static void update(struct conn *c) {
  if (c->dead) return;
  for (struct view *v = c->views; v; v = v->next)
    if (v->receipts) release_receipts(v);
  /* Input held for a terminal: the client waits (past INPUT_HOLD or RECEIPTS_HOLD, unless the view's
     output waits for acknowledgements — the relay's window or the service's pause —, which come behind
     the input; or a view being given back). */
  int hold = 0;
  for (struct view *v = c->views; v; v = v->next)
    hold |= ((v->typed.len >= INPUT_HOLD || v->receipt_bytes >= RECEIPTS_HOLD) && !v->paused &&
             v->sent - v->acked < WINDOW) ||
            (v->releasing && v->typed.len);
  if (!hold) c->beat_due = 0;
  else if (!c->beat_due) c->beat_due = now_us() + HELD_BEAT_US;
  if (c->cfd >= 0) {
    uint32_t want = 0;
    if (!hold && c->from_client.len < IN_LIMIT && c->to_service.len < IN_LIMIT) want |= EPOLLIN;
    if (c->to_client.len) want |= EPOLLOUT;
    watch(c->cfd, &c->ctag, &c->cev, want);
  }
  uint32_t want = 0;
  if (c->to_client.len < OUT_LIMIT && c->from_service.len < OUT_LIMIT) want |= EPOLLIN;
  if (c->to_service.len) want |= EPOLLOUT;
  watch(c->sfd, &c->stag, &c->sev, want);
  for (struct view *v = c->views; v; v = v->next)
    watch(v->fd, &v->tag, &v->events, (view_may_read(v) ? EPOLLIN : 0) | (v->typed.len ? EPOLLOUT : 0));
}

/* Writes what is held for one side (counted in *count); 0 when that side is gone. */
static int flush(int fd, struct buf *b, uint64_t *count) {
  while (b->len) {
    ssize_t w = send(fd, b->p + b->off, b->len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      buf_take(b, (size_t)w);
      if (count) *count += (uint64_t)w;
    }
    else if (w < 0 && errno == EINTR) continue;
    else if (w < 0 && errno == EAGAIN) return 1;
    else return 0;
  }
  return 1;
}

/* Reads what one side has (counted in *count); 0 at its end or an error. */
static int fill(int fd, struct buf *b, uint64_t *count) {
  for (;;) {
    buf_need(b, 65536);
    ssize_t n = recv(fd, b->p + b->off + b->len, 65536, MSG_DONTWAIT);
    if (n > 0) {
      b->len += (size_t)n;
      if (count) *count += (uint64_t)n;
    }
    else if (n < 0 && errno == EINTR) continue;
    return n > 0 || (n < 0 && errno == EAGAIN);
  }
}

static void on_client(struct conn *c, uint32_t events) {
  if (events & EPOLLIN) {
    int open = fill(c->cfd, &c->from_client, NULL);
    from_client(c);
    if (c->dead) return;
    if (!open) {
      /* The client went: what it sent is passed on, then the service sees the end. */
      flush(c->sfd, &c->to_service, &c->s_written);
      return close_conn(c);
    }
  }
  if ((events & EPOLLOUT) && !flush(c->cfd, &c->to_client, NULL)) return close_conn(c);
  if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) return close_conn(c);
  if (c->to_service.len && !flush(c->sfd, &c->to_service, &c->s_written)) return close_conn(c);
}

static void on_service(struct conn *c, uint32_t events) {
  if (events & EPOLLIN) {
    int open = fill(c->sfd, &c->from_service, &c->s_read);
    if (c->key < 0) {
      if (!take_client(c)) return close_conn(c);
      if (c->key < 0 && open) return;
    }
    if (c->key >= 0) from_service(c);
    if (!open) {
      if (c->cfd >= 0) flush(c->cfd, &c->to_client, NULL);
      return close_conn(c);
    }
  }
  if ((events & EPOLLOUT) && !flush(c->sfd, &c->to_service, &c->s_written)) return close_conn(c);
  if (c->cfd >= 0 && c->to_client.len && !flush(c->cfd, &c->to_client, NULL)) return close_conn(c);
}

static void accept_conn(int lfd) {
  for (;;) {
    int s = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (s < 0) return;
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.pid != getppid()) {
      close(s);
      continue;
    }
    struct conn *c = calloc(1, sizeof *c);
    if (!c) _exit(70);
    c->key = -1;
    c->cfd = -1;
    c->sfd = s;
    c->s_http = 1;
    c->ctag = (struct tag){K_CLIENT, c};
    c->stag = (struct tag){K_SERVICE, c};
    add(s, &c->stag, &c->sev, EPOLLIN);
    c->next = conns;
    conns = c;
  }
}

/* ---- requests ---- */

static char *unhex(const char *s, size_t *n) {
  size_t l = strlen(s);
  if (l % 2 || l / 2 > 4096) return NULL;
  char *out = malloc(l / 2 + 1);
  if (!out) _exit(70);
  for (size_t i = 0; i < l / 2; i++) {
    unsigned v;
    if (sscanf(s + 2 * i, "%2x", &v) != 1) {
      free(out);
      return NULL;
    }
    out[i] = (char)v;
  }
  *n = l / 2;
  return out;
}


static void serve(int key, long id, int fd, unsigned long long offset, const char *hhead, const char *hin,
                  const char *hack, unsigned long long written, unsigned long long read) {
  struct conn *c = conns;
  while (c && (c->dead || c->key != key)) c = c->next;
  if (!c) return reply("err no such connection");
  if (c->to_service.len || c->c_copy || c->s_written != read) return reply("err busy");
  if (id < 0 || id > 0xffffffffL || find_view((uint32_t)id)) return reply("err bad id");
  size_t hl, il, al;
  char *head = unhex(hhead, &hl), *in = unhex(hin, &il), *ack = unhex(hack, &al);
  if (!head || !in || !ack) {
    free(head), free(in), free(ack);
    return reply("err bad hex");
  }
  struct stat st;
  int m = getfd(service, fd);
  if (m < 0 || !is_ptmx(m, &st)) {
    if (m >= 0) close(m);
    free(head), free(in), free(ack);
    return reply("err not a terminal master");
  }
  struct view *v = calloc(1, sizeof *v);
  if (!v) _exit(70);
  v->id = (uint32_t)id;
  v->fd = m;
  v->sent = v->acked = offset;
  v->gathered = malloc(GATHER);
  if (!v->gathered) _exit(70);
  v->last_us = INT64_MIN / 2;
  v->start_after = written; /* both counts include the "relay" line */
  buf_put(&v->head, head, hl);
  free(head);
  v->input = in, v->input_len = il;
  v->ack = ack, v->ack_len = al;
  v->conn = c;
  v->tag = (struct tag){K_TERM, v};
  add(m, &v->tag, &v->events, EPOLLIN);
  v->next = c->views;
  c->views = v;
  reply("ok");
}

static void request(char *line) {
  char op[16], a[8200], b2[520], c3[520];
  long x, y;
  unsigned long long off, wr, rd;
  int fd;
  if (sscanf(line, "serve %ld %ld %d %llu %8199s %519s %519s %llu %llu", &x, &y, &fd, &off, a, b2, c3, &wr, &rd) == 9)
    return serve((int)x, y, fd, off, a, b2, c3, wr, rd);
  if (strcmp(line, "stats") == 0) {
    unsigned long nc = 0, nv = 0;
    for (struct conn *c = conns; c; c = c->next)
      if (!c->dead) {
        nc++;
        for (struct view *v = c->views; v; v = v->next) nv++;
      }
    return reply("ok %lu %lu %llu %llu", nc, nv, typed_frames, emitted_frames);
  }
  if (sscanf(line, "%15s %ld", op, &x) != 2) return reply("err bad request");
  struct view *v = x >= 0 && x <= 0xffffffffL ? find_view((uint32_t)x) : NULL;
  if (!v) return reply("err no such view");
  struct conn *c = v->conn;
  if (strcmp(op, "unserve") == 0 && v->typed.len) v->releasing = 1;
  else if (strcmp(op, "unserve") == 0 || strcmp(op, "drop") == 0) drop_view(v, CTL_RELEASED);
  else if (strcmp(op, "pause") == 0) v->paused = 1;
  else if (strcmp(op, "resume") == 0) v->paused = 0;
  else return reply("err bad request");
  update(c);
  reply("ok");
}

static void read_requests(void) {
  ssize_t n = read(0, reqbuf + reqlen, sizeof reqbuf - 1 - reqlen);
  if (n <= 0) _exit(0); /* the service closed our stdin: it is gone */
  reqlen += (size_t)n;
  char *nl;
  while ((nl = memchr(reqbuf, '\n', reqlen))) {
    *nl = 0;
    request(reqbuf);
    size_t used = (size_t)(nl - reqbuf) + 1;
    memmove(reqbuf, nl + 1, reqlen - used);
    reqlen -= used;
  }
  if (reqlen == sizeof reqbuf - 1) reqlen = 0; /* a line this long is nobody's request */
}

#ifdef RELAY_FUZZ
/*
 * tests/unit/relay-fuzz.test.ts compiles this file with -DRELAY_FUZZ and AddressSanitizer: random and
 * mutated client bytes, cut at random places, go through the frame reader and the STOMP look of a
 * connection with a served view (its terminal /dev/null). Any read or write out of bounds aborts.
 */
static uint64_t rng = 88172645463325252ULL;
static uint32_t rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)rng;
}

static size_t ws_frame(unsigned char *out, const unsigned char *payload, size_t n, int op) {
  size_t h = 0;
  out[h++] = (unsigned char)(0x80 | op);
  if (n < 126) out[h++] = (unsigned char)(0x80 | n);
  else if (n < 0x10000) out[h++] = 0x80 | 126, out[h++] = (unsigned char)(n >> 8), out[h++] = (unsigned char)n;
  else {
    out[h++] = 0x80 | 127;
    for (int i = 0; i < 8; i++) out[h++] = (unsigned char)((uint64_t)n >> (56 - 8 * i));
  }
  unsigned char key[4] = {(unsigned char)rnd(), (unsigned char)rnd(), (unsigned char)rnd(), (unsigned char)rnd()};
  memcpy(out + h, key, 4);
  h += 4;
  for (size_t i = 0; i < n; i++) out[h + i] = payload[i] ^ key[i & 3];
  return h + n;
}

int main(int argc, char **argv) {
  long rounds = argc > 1 ? atol(argv[1]) : 100000;
  int null = open("/dev/null", O_WRONLY);
  dup2(null, DATA_FD);
  ep = -1;
  static const char *seeds[] = {
      "SEND\ndestination:/app/shell/x/input\n\nls\n",
      "SEND\ndestination:/app/shell/x/input\ncontent-length:3\n\nab\0\0",
      "\n\r\nSEND\r\ndestination:/app/shell/x/ack\r\noffset:123\r\n\r\n",
      "SEND\ndestination:/app/shell/x/input\nreceipt:r\n\nq",
      "SUBSCRIBE\nid:1\ndestination:/topic/shell/x\n\n",
  };
  static unsigned char payload[LOOK_MAX + 64], wire[LOOK_MAX + 200];
  unsigned long long typed = 0;
  for (long r = 0; r < rounds; r++) {
    struct conn *c = calloc(1, sizeof *c);
    c->cfd = -1, c->sfd = -1, c->key = 1;
    c->next = conns, conns = c;
    struct view *v = calloc(1, sizeof *v);
    /* Half the rounds a terminal that takes nothing until it is read: input and receipts held. */
    int tube[2] = {-1, -1};
    if (r % 2 && pipe2(tube, O_NONBLOCK) == 0) {
      fcntl(tube[1], F_SETPIPE_SZ, 4096);
      static const char fill_[4096];
      if (write(tube[1], fill_, sizeof fill_) < 0) _exit(75); /* full from the start */
      v->fd = tube[1];
    } else {
      v->fd = open("/dev/null", O_WRONLY);
    }
    v->conn = c;
    v->sent = 1000;
    v->input = strdup("/app/shell/x/input"), v->input_len = 18;
    v->ack = strdup("/app/shell/x/ack"), v->ack_len = 16;
    c->views = v;
    for (int k = 0; k < 8 && !c->dead; k++) {
      /* A seed, NUL-ended, then mutated: bytes flipped, cut, grown, or random altogether. */
      const char *seed = seeds[rnd() % 5];
      size_t n = strlen(seed) + 1;
      memcpy(payload, seed, n);
      switch (rnd() % 5) {
      case 0: for (int m = rnd() % 4; m >= 0; m--) payload[rnd() % n] = (unsigned char)rnd(); break;
      case 1: n = rnd() % n; break;
      case 2: { size_t more = rnd() % 300; for (size_t i = 0; i < more && n < LOOK_MAX; i++) payload[n++] = (unsigned char)rnd(); break; }
      case 3: n = rnd() % 32 ? rnd() % 4096 : rnd() % (LOOK_MAX + 2); for (size_t i = 0; i < n; i++) payload[i] = (unsigned char)rnd(); break;
      default: break;
      }
      if (n > LOOK_MAX + 1) n = LOOK_MAX + 1;
      size_t w = ws_frame(wire, payload, n, rnd() % 3 ? 2 : (int)(rnd() % 16));
      if (rnd() % 7 == 0) w = rnd() % (w + 1); /* a frame cut short: the rest never comes */
      if (rnd() % 11 == 0) for (int m = 0; m < 3; m++) wire[rnd() % (w ? w : 1)] = (unsigned char)rnd();
      /* Delivered in pieces, as reads come. */
      for (size_t at = 0; at < w && !c->dead;) {
        size_t piece = 1 + rnd() % (w - at);
        buf_put(&c->from_client, wire + at, piece);
        at += piece;
        from_client(c);
        if (tube[0] >= 0 && !c->dead && c->views && rnd() % 3 == 0) {
          static char sink[8192];
          while (read(tube[0], sink, sizeof sink) > 0) {}
          drain_typed(v);
        }
        if (!c->dead) update(c);
        buf_take(&c->to_service, c->to_service.len);
      }
    }
    if (tube[0] >= 0) close(tube[0]);
    typed += typed_frames;
    typed_frames = 0;
    close_conn(c);
    bury();
    free_dead();
  }
  printf("ok %ld rounds, %llu keystroke frames taken\n", rounds, typed);
  return 0;
}
#else
int main(int argc, char **argv) {
  if (argc != 2 || strlen(argv[1]) >= sizeof(((struct sockaddr_un *)0)->sun_path)) return 64;
  for (int fd = 3; fd < 1024; fd++)
    if (fd != DATA_FD) close(fd);
  service = pidfd_open(getppid());
  ep = epoll_create1(EPOLL_CLOEXEC);
  int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (service < 0 || ep < 0 || lfd < 0) return 71;
  fcntl(service, F_SETFD, FD_CLOEXEC);
  fcntl(DATA_FD, F_SETFD, FD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  strcpy(sa.sun_path, argv[1]);
  unlink(argv[1]);
  mode_t old = umask(077);
  int bound = bind(lfd, (struct sockaddr *)&sa, sizeof sa) == 0;
  umask(old);
  if (!bound || listen(lfd, 128) < 0) {
    fprintf(stderr, "bianbu-relay: %s: %s\n", argv[1], strerror(errno));
    return 71;
  }
  add(lfd, &tag_listen, &listen_ev, EPOLLIN);
  add(0, &tag_stdin, &stdin_ev, EPOLLIN);
  reply("ready");
  struct epoll_event evs[64];
  for (;;) {
    /* The next deadline: output held while a shell streams. */
    int64_t now = now_us(), next = -1;
    for (struct conn *c = conns; c; c = c->next)
      for (struct view *v = c->views; v; v = v->next)
        if (v->got) {
          int64_t at = v->first_us + FLUSH_US - now;
          if (at < 0) at = 0;
          if (next < 0 || at < next) next = at;
        }
    for (struct conn *c = conns; c; c = c->next)
      if (c->beat_due && !c->dead) {
        int64_t at = c->beat_due > now ? c->beat_due - now : 0;
        if (next < 0 || at < next) next = at;
      }
    int n = epoll_wait(ep, evs, 64, next < 0 ? -1 : (int)((next + 999) / 1000));
    if (n < 0 && errno != EINTR) return 72;
    /* Requests first: a pause or an unserve takes effect before the terminals of this turn are read. */
    for (int i = 0; i < n; i++)
      if (evs[i].data.ptr == &tag_stdin) read_requests();
    for (int i = 0; i < n; i++) {
      struct tag *t = evs[i].data.ptr;
      if (t == &tag_stdin) continue;
      if (t == &tag_listen) {
        accept_conn(lfd);
        continue;
      }
      /* A connection closed earlier in this turn still holds its memory until free_dead below. */
      if (t->kind == K_CLIENT || t->kind == K_SERVICE) {
        struct conn *c = t->of;
        if (c->dead) continue;
        if (t->kind == K_CLIENT) on_client(c, evs[i].events);
        else on_service(c, evs[i].events);
        if (!c->dead) update(c);
      } else if (t->kind == K_TERM) {
        /* A view dropped in this turn (unserve, its connection's end) is not looked at. */
        struct view *v = t->of;
        if (v->dead) continue;
        struct conn *c = v->conn;
        if (evs[i].events & EPOLLOUT) drain_typed(v);
        if (!v->dead && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && view_may_read(v)) read_view(v);
        if (c->to_client.len && !flush(c->cfd, &c->to_client, NULL)) close_conn(c);
        if (!c->dead && c->to_service.len && !flush(c->sfd, &c->to_service, &c->s_written)) close_conn(c);
        if (!c->dead) update(c);
      }
    }
    now = now_us();
    for (struct conn *c = conns; c; c = c->next) {
      if (c->dead) continue;
      if (c->beat_due && now >= c->beat_due) {
        beat(c, now);
        if (c->dead) continue;
        update(c);
      }
      int held = 0;
      for (struct view *v = c->views; v; v = v->next)
        if (v->got && now - v->first_us >= FLUSH_US) {
          flush_view(v, now);
          held = 1;
        }
      if (held) {
        if (c->to_client.len && !flush(c->cfd, &c->to_client, NULL)) close_conn(c);
        if (!c->dead) update(c);
      }
    }
    bury();
    free_dead();
  }
}
#endif
