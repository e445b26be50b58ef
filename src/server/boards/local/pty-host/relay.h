/*
 * What the WebSocket relay's files share (relay.c: connections, requests, main; relay-view.c: served
 * views and the STOMP look at client frames): limits, buffers, the view and connection records, the
 * relay's state and the functions each file calls of the other.
 */
#ifndef BIANBU_RELAY_H
#define BIANBU_RELAY_H

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

static inline void buf_need(struct buf *b, size_t more) {
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

static inline void buf_put(struct buf *b, const void *s, size_t n) {
  buf_need(b, n);
  memcpy(b->p + b->off + b->len, s, n);
  b->len += n;
}

static inline void buf_take(struct buf *b, size_t n) {
  b->off += n;
  b->len -= n;
  if (!b->len) b->off = 0;
}

static inline void buf_free(struct buf *b) {
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

/* The relay's state (relay.c). */
extern int service, ep;
extern struct conn *conns;
extern struct view *graveyard;
extern uint32_t listen_ev, stdin_ev;
extern struct tag tag_listen, tag_stdin;
extern unsigned long long typed_frames, emitted_frames;
extern char reqbuf[8192];
extern size_t reqlen;

/* relay-view.c */
void drop_view(struct view *v, int mark);
int look(struct conn *c, const char *p, size_t n);
void queue_ours(struct conn *c);
void release_receipts(struct view *v);
int64_t now_us(void);
int view_may_read(struct view *v);
struct view *find_view(uint32_t id);
void drain_typed(struct view *v);
void read_view(struct view *v);
void flush_view(struct view *v, int64_t now);
void bury(void);
/* relay.c */
int flush(int fd, struct buf *b, uint64_t *count);
void send_mark(int type, uint32_t id, const char *data, size_t n);
void watch(int fd, struct tag *t, uint32_t *cur, uint32_t want);

#endif
