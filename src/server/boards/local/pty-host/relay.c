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
 *
 * Served views and the STOMP look at client frames are relay-view.c's; what both share is relay.h.
 */
#include "relay.h"

int service, ep;
struct conn *conns;
struct view *graveyard;
uint32_t listen_ev, stdin_ev;
struct tag tag_listen = {K_LISTEN, NULL}, tag_stdin = {K_STDIN, NULL};
unsigned long long typed_frames, emitted_frames;
char reqbuf[8192];
size_t reqlen;


/* One frame, in one write: a keystroke's echo costs the relay one system call here, not two. */
void send_mark(int type, uint32_t id, const char *data, size_t n) {
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

void watch(int fd, struct tag *t, uint32_t *cur, uint32_t want) {
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
int flush(int fd, struct buf *b, uint64_t *count) {
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
