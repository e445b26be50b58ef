/*
 * The served views of the WebSocket relay (relay.c): a view's terminal read and its output written to
 * the client as MESSAGE frames (and to the service), its input typed into the terminal as the terminal
 * takes it, receipts held until then, acknowledgements; and the STOMP look at a client frame that
 * decides whether it is input for a served view.
 */
#include "relay.h"

/* ---- views ---- */

struct view *find_view(uint32_t id) {
  for (struct conn *c = conns; c; c = c->next)
    for (struct view *v = c->views; v; v = v->next)
      if (v->id == id) return v;
  return NULL;
}

static void forget_receipts(struct view *v) {
  while (v->receipts) {
    struct held_receipt *r = v->receipts;
    v->receipts = r->next;
    free(r);
  }
  v->receipt_bytes = 0;
}

void drop_view(struct view *v, int mark) {
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

void bury(void) {
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

/* Our frames go to the client between the service's, never inside one. */
void queue_ours(struct conn *c) {
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

int view_may_read(struct view *v) {
  struct conn *c = v->conn;
  return !v->paused && !v->ended && c->s_read >= v->start_after && v->sent - v->acked < WINDOW &&
         c->to_client.len < OUT_LIMIT && c->ours.len < OUT_LIMIT;
}

int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void flush_view(struct view *v, int64_t now) {
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
void read_view(struct view *v) {
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
void release_receipts(struct view *v) {
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

void drain_typed(struct view *v) {
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
int look(struct conn *c, const char *p, size_t n) {
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

