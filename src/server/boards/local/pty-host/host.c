/*
 * A board's PTY host: one small process per board, started inside it (its namespaces, cgroups and
 * user, capabilities dropped as for a root shell) on the first shell opened there, then kept. It opens
 * terminals from the board's own /dev/ptmx, so `tty` and job control work without a relay, forks the
 * login shells onto them, and moves their bytes to and from the service over its stdin and stdout in
 * the frames of protocol.ts.
 *
 * Written in C, as the fastest web terminals are: per chunk of output it costs one read of the
 * terminal and one write to the service, with no copy in between (the read lands in the output buffer
 * behind the space left for its header), and it holds about a hundred KiB instead of a Node runtime.
 * The service compiles it once (host-binary.ts) and passes it open as descriptor 3; the board runs it
 * as /proc/self/fd/3, so no path of the service's exists in the board.
 *
 * Whatever this process does, the board's root could do too (it can kill or replace it): the service
 * trusts nothing it says. What the service sends is trusted, but checked all the same: a frame that
 * breaks the protocol ends the host.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/* Service -> host (protocol.ts ToHost). */
enum { TO_OPEN = 1, TO_INPUT = 2, TO_RESIZE = 3, TO_PAUSE = 4, TO_RESUME = 5, TO_SIGNAL = 6, TO_OPEN_PTS = 7 };
/* Host -> service (protocol.ts FromHost). */
enum { FROM_READY = 0, FROM_OPENED = 1, FROM_DATA = 2, FROM_EXIT = 3, FROM_FAILED = 4 };

#define HEADER 9
#define MAX_FRAME (256 * 1024)
/* Output read from one terminal while it has more, sent as one frame. */
#define GATHER (64 * 1024)
/*
 * Output waiting for the service past which no terminal is read until it drains. Small: what waits
 * here is already read from its terminal, so a pause cannot stop it; past the service's slack for a
 * paused shell (1 MiB) the service holds the whole pipe, and every other shell of the board with it.
 */
#define OUT_HIGH (64 * 1024)
/* After the program ended, how long its terminal may stay open (a background job holding it). */
#define DRAIN_MS 200
#define MAX_ARGS 256
#define MAX_ENV 1024

struct buf {
  char *p;
  size_t off, len, cap; /* bytes [off, len) are waiting */
};

struct term {
  uint32_t id;
  pid_t pid;
  int fd;
  int exited, code, sig;
  int64_t drain_at;
  int closed, paused, dead;
  uint32_t events; /* what epoll watches for it now */
  struct buf in;   /* input the terminal has not taken yet */
  struct term *next;
};

static struct term *terms;
static struct buf out;
static int ep, sigfd, congested;
static char tag_in, tag_out, tag_sig;
static uint32_t out_events;

static void die(int code) { _exit(code); }

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reserve(struct buf *b, size_t more) {
  if (b->off > 0 && b->off == b->len) b->off = b->len = 0;
  if (b->len + more <= b->cap) return;
  if (b->off > 0) {
    memmove(b->p, b->p + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
    if (b->len + more <= b->cap) return;
  }
  size_t cap = b->cap ? b->cap : 4096;
  while (cap < b->len + more) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) die(70);
  b->p = p;
  b->cap = cap;
}

static void put_header(char *h, int type, uint32_t id, uint32_t len) {
  h[0] = (char)type;
  h[1] = (char)(id >> 24), h[2] = (char)(id >> 16), h[3] = (char)(id >> 8), h[4] = (char)id;
  h[5] = (char)(len >> 24), h[6] = (char)(len >> 16), h[7] = (char)(len >> 8), h[8] = (char)len;
}

static uint32_t get32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t get16(const unsigned char *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static void watch(int fd, void *tag, uint32_t events, int op) {
  struct epoll_event ev = {.events = events, .data.ptr = tag};
  if (epoll_ctl(ep, op, fd, &ev) < 0) die(71);
}

static void want(struct term *t);

/* Writes what it can of the output; what the pipe does not take waits for it to drain. */
static void flush_out(void) {
  while (out.off < out.len) {
    ssize_t n = write(1, out.p + out.off, out.len - out.off);
    if (n > 0) {
      out.off += (size_t)n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      break;
    } else {
      die(0); /* the service is gone, and with it every shell of this host */
    }
  }
  if (out.off == out.len) out.off = out.len = 0;
  uint32_t ev = out.off < out.len ? EPOLLOUT : 0;
  if (ev != out_events) {
    watch(1, &tag_out, ev, EPOLL_CTL_MOD);
    out_events = ev;
  }
  int was = congested;
  congested = out.len - out.off > OUT_HIGH;
  if (was != congested)
    for (struct term *t = terms; t; t = t->next) want(t);
}

static void send_frame(int type, uint32_t id, const void *payload, size_t len) {
  reserve(&out, HEADER + len);
  put_header(out.p + out.len, type, id, (uint32_t)len);
  if (len) memcpy(out.p + out.len + HEADER, payload, len);
  out.len += HEADER + len;
  flush_out();
}

static void want(struct term *t) {
  if (t->closed) return;
  uint32_t ev = 0;
  if (!t->paused && !congested) ev |= EPOLLIN;
  if (t->in.off < t->in.len) ev |= EPOLLOUT;
  if (ev != t->events) {
    watch(t->fd, t, ev, EPOLL_CTL_MOD);
    t->events = ev;
  }
}

static struct term *find(uint32_t id) {
  for (struct term *t = terms; t; t = t->next)
    if (t->id == id && !t->dead) return t;
  return NULL;
}

/* The end goes out once the program has ended and every byte of its terminal has been sent. */
static void finish(struct term *t) {
  if (!t->exited || !t->closed || t->dead) return;
  char msg[64];
  int n = snprintf(msg, sizeof msg, "{\"code\":%d,\"signal\":%d}", t->code, t->sig);
  send_frame(FROM_EXIT, t->id, msg, (size_t)n);
  t->dead = 1; /* freed at the end of this turn: events of this turn may still name it */
}

static void close_term(struct term *t) {
  if (t->closed) return;
  epoll_ctl(ep, EPOLL_CTL_DEL, t->fd, NULL);
  close(t->fd);
  t->closed = 1;
  finish(t);
}

/* Reads the terminal while it has output, up to GATHER, straight into the output buffer. */
static void read_term(struct term *t) {
  reserve(&out, HEADER + GATHER);
  char *h = out.p + out.len;
  size_t got = 0;
  int gone = 0;
  while (got < GATHER) {
    ssize_t n = read(t->fd, h + HEADER + got, GATHER - got);
    if (n > 0) {
      got += (size_t)n;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      /* EIO (or 0) once every process of the terminal has closed it: the end of the output. */
      gone = !(n < 0 && errno == EAGAIN);
      break;
    }
  }
  if (got) {
    put_header(h, FROM_DATA, t->id, (uint32_t)got);
    out.len += HEADER + got;
    flush_out();
  }
  if (gone) close_term(t);
}

static void write_term(struct term *t) {
  while (t->in.off < t->in.len) {
    ssize_t n = write(t->fd, t->in.p + t->in.off, t->in.len - t->in.off);
    if (n > 0) t->in.off += (size_t)n;
    else if (n < 0 && errno == EINTR) continue;
    else if (n < 0 && errno == EAGAIN) break;
    else {
      t->in.off = t->in.len; /* the terminal is going away; its input with it */
      break;
    }
  }
  if (t->in.off == t->in.len) t->in.off = t->in.len = 0;
  want(t);
}

static void fail_open(uint32_t id, const char *what, int err) {
  char msg[256];
  int n = snprintf(msg, sizeof msg, "%s: %s", what, strerror(err));
  send_frame(FROM_FAILED, id, msg, (size_t)(n < (int)sizeof msg ? n : (int)sizeof msg - 1));
}

/*
 * open: u16 cols, u16 rows, u16 argc, u16 envc, then NUL-terminated strings: cwd, argv[argc],
 * env[envc] ("NAME=value"). open_pts: u32 terminal number, then the same.
 */
static void open_term(int type, uint32_t id, unsigned char *p, size_t len) {
  uint32_t pts = 0;
  if (type == TO_OPEN_PTS) {
    if (len < 4) die(3);
    pts = get32(p);
    p += 4, len -= 4;
  }
  if (len < 8 || find(id)) die(3);
  uint16_t cols = get16(p), rows = get16(p + 2), argc = get16(p + 4), envc = get16(p + 6);
  if (argc < 1 || argc > MAX_ARGS || envc > MAX_ENV || cols < 1 || rows < 1) die(3);
  char *s = (char *)p + 8, *end = (char *)p + len;
  char *strs[1 + MAX_ARGS + MAX_ENV];
  size_t count = 1 + (size_t)argc + envc;
  for (size_t i = 0; i < count; i++) {
    char *z = memchr(s, 0, (size_t)(end - s));
    if (!z) die(3);
    strs[i] = s;
    s = z + 1;
  }
  if (s != end) die(3);
  char *argv[MAX_ARGS + 1], *envp[MAX_ENV + 1];
  for (size_t i = 0; i < argc; i++) argv[i] = strs[1 + i];
  argv[argc] = NULL;
  for (size_t i = 0; i < envc; i++) envp[i] = strs[1 + argc + i];
  envp[envc] = NULL;
  const char *cwd = strs[0];

  int m = -1, s_fd;
  if (type == TO_OPEN_PTS) {
    /* A terminal the service opened in this board's devpts and holds the master of: only the
       program's end is ours. */
    char name[32];
    snprintf(name, sizeof name, "/dev/pts/%u", pts);
    s_fd = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s_fd < 0) return fail_open(id, "open the terminal", errno);
  } else {
    m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (m < 0) return fail_open(id, "open /dev/ptmx", errno);
    if (grantpt(m) < 0 || unlockpt(m) < 0) {
      int e = errno;
      close(m);
      return fail_open(id, "unlockpt", e);
    }
    s_fd = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (s_fd < 0) {
      char name[64];
      if (ptsname_r(m, name, sizeof name) == 0) s_fd = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    }
    if (s_fd < 0) {
      int e = errno;
      close(m);
      return fail_open(id, "open the terminal", e);
    }
    struct winsize ws = {.ws_row = rows, .ws_col = cols};
    ioctl(m, TIOCSWINSZ, &ws);
  }
  struct termios tio;
  if (tcgetattr(s_fd, &tio) == 0) {
    tio.c_iflag |= IUTF8;
    tcsetattr(s_fd, TCSANOW, &tio);
  }
  pid_t pid = fork();
  if (pid == 0) {
    /* The program: a session of its own on the terminal, signals as a fresh process has them (an
       ignored SIGPIPE would survive exec). */
    sigset_t none;
    sigemptyset(&none);
    signal(SIGPIPE, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    ioctl(s_fd, TIOCSCTTY, 0);
    dup2(s_fd, 0), dup2(s_fd, 1), dup2(s_fd, 2);
    if (chdir(cwd) < 0 && chdir("/") < 0) {
    }
    execvpe(argv[0], argv, envp);
    /* Said on the terminal, as a terminal emulator would; the shell then ends with 127. The
       service is answered at the fork, so the exec runs while the answer travels. */
    dprintf(2, "bianbu: cannot run %s: %s\r\n", argv[0], strerror(errno));
    _exit(127);
  }
  int e = errno;
  close(s_fd);
  if (pid < 0) {
    if (m >= 0) close(m);
    return fail_open(id, "fork", e);
  }
  struct term *t = calloc(1, sizeof *t);
  if (!t) die(70);
  t->id = id;
  t->pid = pid;
  t->fd = m;
  t->next = terms;
  terms = t;
  /* Without a master here there is nothing to read: the end goes out when the program ends. */
  if (m < 0) t->closed = 1;
  else watch(m, t, 0, EPOLL_CTL_ADD);
  unsigned char pidb[4] = {(unsigned char)(pid >> 24), (unsigned char)(pid >> 16), (unsigned char)(pid >> 8), (unsigned char)pid};
  send_frame(FROM_OPENED, id, pidb, 4);
  want(t);
}

static void on_frame(int type, uint32_t id, unsigned char *p, size_t len) {
  if (type == TO_OPEN || type == TO_OPEN_PTS) return open_term(type, id, p, len);
  struct term *t = find(id);
  if (type < TO_INPUT || type > TO_SIGNAL) die(3);
  if (!t) return;
  if (t->closed && type != TO_SIGNAL) return;
  switch (type) {
  case TO_INPUT:
    if (t->in.off == t->in.len) {
      /* Straight to the terminal; what it does not take now waits for it. */
      ssize_t n;
      do n = write(t->fd, p, len);
      while (n < 0 && errno == EINTR);
      if (n < 0) n = 0;
      p += n, len -= (size_t)n;
    }
    if (len) {
      reserve(&t->in, len);
      memcpy(t->in.p + t->in.len, p, len);
      t->in.len += len;
    }
    want(t);
    return;
  case TO_RESIZE:
    if (len == 4) {
      struct winsize ws = {.ws_row = get16(p + 2), .ws_col = get16(p)};
      ioctl(t->fd, TIOCSWINSZ, &ws);
    }
    return;
  case TO_PAUSE:
  case TO_RESUME:
    t->paused = type == TO_PAUSE;
    want(t);
    return;
  case TO_SIGNAL:
    kill(t->pid, len == 7 && memcmp(p, "SIGKILL", 7) == 0 ? SIGKILL : SIGHUP);
    return;
  }
}

/* Frames from the service, put together across reads. */
static unsigned char head[HEADER];
static size_t head_got;
static unsigned char *payload;
static size_t payload_len, payload_got;
static int in_payload;

static void read_service(void) {
  static unsigned char chunk[64 * 1024];
  ssize_t n = read(0, chunk, sizeof chunk);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) die(0); /* the service is gone */
  size_t at = 0;
  while (at < (size_t)n) {
    if (!in_payload) {
      size_t take = HEADER - head_got < (size_t)n - at ? HEADER - head_got : (size_t)n - at;
      memcpy(head + head_got, chunk + at, take);
      head_got += take, at += take;
      if (head_got < HEADER) return;
      head_got = 0;
      payload_len = get32(head + 5);
      if (payload_len > MAX_FRAME) die(3);
      payload_got = 0;
      in_payload = 1;
    }
    size_t take = payload_len - payload_got < (size_t)n - at ? payload_len - payload_got : (size_t)n - at;
    memcpy(payload + payload_got, chunk + at, take);
    payload_got += take, at += take;
    if (payload_got == payload_len) {
      in_payload = 0;
      on_frame(head[0], get32(head + 1), payload, payload_len);
    }
  }
}

static struct term *by_pid(pid_t pid) {
  for (struct term *t = terms; t; t = t->next)
    if (t->pid == pid && !t->exited) return t;
  return NULL;
}

static void reap(void) {
  struct signalfd_siginfo si;
  while (read(sigfd, &si, sizeof si) == sizeof si) {
  }
  int st;
  pid_t pid;
  while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
    struct term *t = by_pid(pid);
    if (!t) continue;
    t->exited = 1;
    t->code = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
    t->sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    /* Output still in the terminal is read first; a job that keeps it open does not keep the
       shell from ending. */
    t->drain_at = now_ms() + DRAIN_MS;
    finish(t);
  }
}

/* The board can read /proc/<pid>/exe of this process: run from a sealed anonymous copy (a memfd), as
   runc does, so the link names no host path and no host file can be reached through it. Once: a copy
   already runs from "/memfd:". Any failure runs the program as it is. */
static void run_sealed(char **argv) {
  char self[256];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = 0;
    if (strncmp(self, "/memfd:", 7) == 0) return;
  }
  int src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  int mem = memfd_create("bianbu-pty-host", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (src < 0 || mem < 0) goto out;
  char buf[65536];
  for (;;) {
    ssize_t r = read(src, buf, sizeof buf);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      goto out;
    }
    for (ssize_t w = 0; w < r;) {
      ssize_t k = write(mem, buf + w, (size_t)(r - w));
      if (k < 0) {
        if (errno == EINTR) continue;
        goto out;
      }
      w += k;
    }
  }
  fcntl(mem, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  close(src);
  src = -1;
  fexecve(mem, argv, environ);
out:
  if (src >= 0) close(src);
  if (mem >= 0) close(mem);
}

int main(int argc, char **argv) {
  (void)argc;
  run_sealed(argv);
  prctl(PR_SET_NAME, "bianbu-pty-host");
  /* The service's end of the entry (its spawned process) going means the service dropped this host. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  /* Descriptor 3 was this program itself; nothing else above stdio is ours. */
  close(3);
  signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  sigfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  ep = epoll_create1(EPOLL_CLOEXEC);
  payload = malloc(MAX_FRAME);
  if (sigfd < 0 || ep < 0 || !payload) die(71);
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
  fcntl(0, F_SETFD, FD_CLOEXEC);
  fcntl(1, F_SETFD, FD_CLOEXEC);
  fcntl(2, F_SETFD, FD_CLOEXEC);
  watch(0, &tag_in, EPOLLIN, EPOLL_CTL_ADD);
  watch(1, &tag_out, 0, EPOLL_CTL_ADD);
  watch(sigfd, &tag_sig, EPOLLIN, EPOLL_CTL_ADD);
  /* A path-only handle on the board's ptmx, kept: the service makes its terminals through it (ctl.c)
     and holds their masters itself. Said in the ready frame; without it, shells go through here. */
  int ptmx = open("/dev/pts/ptmx", O_PATH | O_CLOEXEC);
  /* And one on its devpts root, for the helper to bound the board's count of terminals. */
  int pts = open("/dev/pts", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (ptmx >= 0 && pts >= 0) {
    unsigned char fdb[8] = {(unsigned char)(ptmx >> 24), (unsigned char)(ptmx >> 16), (unsigned char)(ptmx >> 8), (unsigned char)ptmx,
                            (unsigned char)(pts >> 24), (unsigned char)(pts >> 16), (unsigned char)(pts >> 8), (unsigned char)pts};
    send_frame(FROM_READY, 0, fdb, 8);
  } else if (ptmx >= 0) {
    unsigned char fdb[4] = {(unsigned char)(ptmx >> 24), (unsigned char)(ptmx >> 16), (unsigned char)(ptmx >> 8), (unsigned char)ptmx};
    send_frame(FROM_READY, 0, fdb, 4);
  } else {
    send_frame(FROM_READY, 0, NULL, 0);
  }

  struct epoll_event evs[64];
  for (;;) {
    int64_t next = -1, now = now_ms();
    for (struct term *t = terms; t; t = t->next)
      if (t->exited && !t->closed && !t->dead) {
        int64_t left = t->drain_at > now ? t->drain_at - now : 0;
        if (next < 0 || left < next) next = left;
      }
    int n = epoll_wait(ep, evs, 64, (int)next);
    if (n < 0 && errno != EINTR) die(72);
    for (int i = 0; i < n; i++) {
      void *tag = evs[i].data.ptr;
      uint32_t e = evs[i].events;
      if (tag == &tag_in) read_service();
      else if (tag == &tag_out) flush_out();
      else if (tag == &tag_sig) reap();
      else {
        struct term *t = tag;
        if (t->closed) continue;
        if (e & EPOLLOUT) write_term(t);
        /* A hang-up is reported even unasked: the last output is read, then the end. */
        if (e & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_term(t);
      }
    }
    now = now_ms();
    for (struct term *t = terms; t; t = t->next)
      if (t->exited && !t->closed && !t->dead && now >= t->drain_at) {
        read_term(t);
        close_term(t);
      }
    for (struct term **pp = &terms; *pp;) {
      struct term *t = *pp;
      if (t->dead) {
        *pp = t->next;
        free(t->in.p);
        free(t);
      } else {
        pp = &t->next;
      }
    }
  }
}
