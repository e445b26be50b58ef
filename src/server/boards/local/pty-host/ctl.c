/*
 * The service's terminal helper: one small process per service, on the host side (never in a board),
 * doing for the service the terminal calls Node has no way to make (ioctl, fchown on a descriptor).
 *
 * It lets the service hold a board's terminals itself. The board's PTY host keeps a path-only handle
 * on its board's /dev/pts/ptmx; this helper takes a copy of that handle (pidfd_getfd), checks that it
 * is a devpts ptmx and nothing else, and keeps it. The service opens its terminals through
 * /proc/<this>/fd/<n>: each open makes a new terminal in the board's own devpts, and the master end is
 * a file description no process of the board has ever held, so no board can read it, write it or
 * change its flags (a master made blocking under the service would stop its event loop). The helper
 * then unlocks the terminal, sizes it and gives its node to the board's root, through descriptors
 * only: no path inside a board is resolved here. The board's PTY host opens the terminal by its
 * number and starts the shell on it; the shell's bytes then go between the service and the kernel
 * with no process of the board's in between.
 *
 * Requests are lines on stdin, answered in order on stdout, "ok ..." or "err <why>":
 *   ptmx <pid> <ppid> <fd> [<dir> <max>]
 *                               take the ptmx handle <fd> of process <pid>, whose parent must be
 *                               <ppid>: answers "ok <held fd> <uid> <gid> <bounded>" (the node's
 *                               owner; 1 when <dir>, the handle on that devpts's root, was used to
 *                               limit the instance to <max> terminals)
 *   pty <fd> <cols> <rows> <uid> <gid>
 *                               the service's new master <fd>: unlock, size, hand the terminal to
 *                               uid:gid (mode 620); answers "ok <terminal number>"
 *   size <fd> <cols> <rows>     resize the service's master <fd>
 *   drop <held fd>              close a ptmx handle taken earlier
 *   read <id> <fd>              read the service's master <fd> for it during a flood (below)
 *   pause <id> / resume <id>    stop / start reading it (the service's flow control)
 *   unread <id>                 stop reading it for good (the shell ends); what was read goes first
 *
 * Floods: the service reads its terminals itself, so a keystroke's echo wakes nothing else. But a
 * terminal hands out 4 KiB per read, and a read that waits behind the service's other work holds up
 * the program writing. When the service sees a flood it stops reading and asks this process to read
 * for it: here a read costs a few microseconds, runs beside the service on the other CPU, and the
 * output goes to the service gathered, up to 64 KiB a frame, on descriptor 4 (frames of protocol.ts:
 * type u8, id u32, length u32, payload). Once the terminal has been quiet for RELEASE_MS this process
 * stops reading it and says so (a "released" frame after its last data), and the service reads again.
 * A terminal whose end is read here is answered with an "ended" frame.
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
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "helper.h"

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig 431
#endif
#define PICK_CLOEXEC 1
#define PICK_EMPTY_PATH 8
#define CONFIG_SET_STRING 1
#define CONFIG_CMD_RECONFIGURE 7
#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

#define GATHER (64 * 1024)
/* Output held at most this long before it goes, while more may come. */
#define FLUSH_MS 1
/* A terminal read here that stays quiet this long goes back to the service. */
#define RELEASE_MS 5

static int service; /* pidfd of the service, our parent */
static int ep;

struct reader {
  uint32_t id;
  int fd, paused;
  int64_t first_at, last_at; /* when the held output began; when output last came */
  size_t got;
  struct reader *next;
  char buf[HEADER + GATHER];
};
static struct reader *readers;
static char tag_requests;


static long parent_of(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  long ppid;
  if (!p || sscanf(p + 2, "%*c %ld", &ppid) != 1) return -1;
  return ppid;
}

/*
 * Limits a board's devpts to `max` terminals: Linux counts terminals machine-wide, and a board's root
 * could otherwise take them all from the other boards. Done on the handle of the instance's root
 * (fspick), never a path; the board's root cannot raise it again (no CAP_SYS_ADMIN). A remount
 * parses its options afresh, so the modes bwrap mounted it with are given again.
 */
static int bound_devpts(int pfd, long dir, const struct stat *ptmx, long max) {
  int d = getfd(pfd, (int)dir);
  if (d < 0) return 0;
  struct stat st;
  struct statfs fs;
  int ok = fstat(d, &st) == 0 && S_ISDIR(st.st_mode) && st.st_ino == 1 && st.st_dev == ptmx->st_dev &&
           fstatfs(d, &fs) == 0 && fs.f_type == DEVPTS_MAGIC;
  int fc = ok ? (int)syscall(SYS_fspick, d, "", PICK_EMPTY_PATH | PICK_CLOEXEC) : -1;
  close(d);
  if (fc < 0) return 0;
  char n[32];
  snprintf(n, sizeof n, "%ld", max);
  ok = syscall(SYS_fsconfig, fc, CONFIG_SET_STRING, "mode", "620", 0) == 0 &&
       syscall(SYS_fsconfig, fc, CONFIG_SET_STRING, "ptmxmode", "666", 0) == 0 &&
       syscall(SYS_fsconfig, fc, CONFIG_SET_STRING, "max", n, 0) == 0 &&
       syscall(SYS_fsconfig, fc, CONFIG_CMD_RECONFIGURE, NULL, NULL, 0) == 0;
  if (!ok) fprintf(stderr, "bianbu-pty-ctl: devpts max: %s\n", strerror(errno));
  close(fc);
  return ok;
}

static void take_ptmx(long pid, long ppid, long fd, long dir, long max) {
  int pfd = pidfd_open((pid_t)pid);
  if (pfd < 0) return reply("err pidfd_open: %s", strerror(errno));
  /* The pidfd names one process for good; its parent checked after it is opened, and the process
     still alive after that, it is the process asked for and not one that took over its pid. */
  if (parent_of((pid_t)pid) != ppid || syscall(SYS_pidfd_send_signal, pfd, 0, NULL, 0) != 0) {
    close(pfd);
    return reply("err not the process asked for");
  }
  int h = getfd(pfd, (int)fd);
  int e = errno;
  if (h < 0) {
    close(pfd);
    return reply("err pidfd_getfd: %s", strerror(e));
  }
  struct stat st;
  if (!is_ptmx(h, &st)) {
    close(h);
    close(pfd);
    return reply("err not a devpts ptmx");
  }
  int bounded = dir >= 0 && max > 0 && bound_devpts(pfd, dir, &st, max);
  close(pfd);
  reply("ok %d %u %u %d", h, (unsigned)st.st_uid, (unsigned)st.st_gid, bounded);
}

static void make_pty(long fd, long cols, long rows, long uid, long gid) {
  int m = getfd(service, (int)fd);
  if (m < 0) return reply("err pidfd_getfd: %s", strerror(errno));
  struct stat st;
  int n = -1, unlock = 0, s = -1;
  const char *what = "not a terminal master";
  if (!is_ptmx(m, &st)) goto fail;
  what = "unlock";
  if (ioctl(m, TIOCSPTLCK, &unlock) < 0) goto fail;
  what = "number";
  if (ioctl(m, TIOCGPTN, &n) < 0) goto fail;
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  ioctl(m, TIOCSWINSZ, &ws);
  what = "open the terminal";
  s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s < 0) goto fail;
  struct termios tio;
  if (tcgetattr(s, &tio) == 0) {
    tio.c_iflag |= IUTF8;
    tcsetattr(s, TCSANOW, &tio);
  }
  /* The terminal is the board's: its root opens it by number, as a terminal of its own. */
  what = "give the terminal to the board";
  if (fchown(s, (uid_t)uid, (gid_t)gid) < 0 || fchmod(s, 0620) < 0) goto fail;
  close(s);
  close(m);
  return reply("ok %d", n);
fail: {
  int e = errno;
  if (s >= 0) close(s);
  close(m);
  reply("err %s: %s", what, e ? strerror(e) : "no");
}
}

static void resize(long fd, long cols, long rows) {
  int m = getfd(service, (int)fd);
  if (m < 0) return reply("err pidfd_getfd: %s", strerror(errno));
  struct stat st;
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  int ok = is_ptmx(m, &st) && ioctl(m, TIOCSWINSZ, &ws) == 0;
  close(m);
  if (ok) reply("ok");
  else reply("err resize");
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


static void send_data(struct reader *r) {
  if (!r->got) return;
  r->buf[0] = CTL_DATA;
  put32(r->buf + 1, r->id);
  put32(r->buf + 5, (uint32_t)r->got);
  write_all(r->buf, HEADER + r->got);
  r->got = 0;
}

static void send_mark(int type, uint32_t id) {
  char h[HEADER] = {(char)type};
  put32(h + 1, id);
  put32(h + 5, 0);
  write_all(h, HEADER);
}

static struct reader *find_reader(long id) {
  for (struct reader *r = readers; r; r = r->next)
    if (r->id == (uint32_t)id) return r;
  return NULL;
}

static void forget(struct reader *r, int mark) {
  send_data(r);
  if (mark) send_mark(mark, r->id);
  epoll_ctl(ep, EPOLL_CTL_DEL, r->fd, NULL);
  close(r->fd);
  for (struct reader **pp = &readers; *pp; pp = &(*pp)->next)
    if (*pp == r) {
      *pp = r->next;
      break;
    }
  free(r);
}

static void watch_reader(struct reader *r) {
  struct epoll_event ev = {.events = r->paused ? 0 : EPOLLIN, .data.ptr = r};
  epoll_ctl(ep, EPOLL_CTL_MOD, r->fd, &ev);
}

/*
 * Reads the terminal while it has output, into the frame being gathered, and returns once a frame is
 * full: during a flood the terminal always has more, and the service's requests (a pause) wait for
 * this loop to come back to epoll.
 */
static void read_reader(struct reader *r) {
  int64_t now = now_ms();
  while (!r->paused) {
    ssize_t n = read(r->fd, r->buf + HEADER + r->got, GATHER - r->got);
    if (n > 0) {
      if (!r->got) r->first_at = now;
      r->got += (size_t)n;
      r->last_at = now;
      if (r->got == GATHER) return send_data(r);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      return;
    } else {
      /* EIO (or 0): every process of the terminal has closed it. */
      return forget(r, CTL_ENDED);
    }
  }
}

static void start_reading(long id, long fd) {
  if (id < 0 || id > 0xffffffffL || find_reader(id)) return reply("err bad id");
  int m = getfd(service, (int)fd);
  if (m < 0) return reply("err pidfd_getfd: %s", strerror(errno));
  struct stat st;
  if (!is_ptmx(m, &st)) {
    close(m);
    return reply("err not a terminal master");
  }
  struct reader *r = calloc(1, sizeof *r);
  if (!r) _exit(70);
  r->id = (uint32_t)id;
  r->fd = m;
  r->last_at = now_ms();
  r->next = readers;
  readers = r;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = r};
  epoll_ctl(ep, EPOLL_CTL_ADD, m, &ev);
  reply("ok");
}

/* Requests: whole lines, read as they come. */
static char reqbuf[4096];
static size_t reqlen;

static void request(char *line);

static void read_requests(void) {
  ssize_t n = read(0, reqbuf + reqlen, sizeof reqbuf - 1 - reqlen);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) _exit(0); /* the service is gone */
  reqlen += (size_t)n;
  char *start = reqbuf, *nl;
  while ((nl = memchr(start, '\n', reqlen - (size_t)(start - reqbuf)))) {
    *nl = 0;
    request(start);
    start = nl + 1;
  }
  reqlen -= (size_t)(start - reqbuf);
  memmove(reqbuf, start, reqlen);
  if (reqlen == sizeof reqbuf - 1) _exit(3); /* no request is this long */
}

static void request(char *line) {
  char op[8];
  long a = 0, b = 0, c = 0, d = 0, e = 0;
  int got = sscanf(line, "%7s %ld %ld %ld %ld %ld", op, &a, &b, &c, &d, &e);
  errno = 0;
  if (got == 4 && strcmp(op, "ptmx") == 0) take_ptmx(a, b, c, -1, 0);
  else if (got == 6 && strcmp(op, "ptmx") == 0) take_ptmx(a, b, c, d, e);
  else if (got == 6 && strcmp(op, "pty") == 0) make_pty(a, b, c, d, e);
  else if (got == 4 && strcmp(op, "size") == 0) resize(a, b, c);
  else if (got == 3 && strcmp(op, "read") == 0) start_reading(a, b);
  else if (got == 2 && (strcmp(op, "pause") == 0 || strcmp(op, "resume") == 0)) {
    struct reader *r = find_reader(a);
    if (r) {
      r->paused = op[0] == 'p';
      if (r->paused) send_data(r);
      r->last_at = now_ms();
      watch_reader(r);
    }
    reply("ok");
  } else if (got == 2 && strcmp(op, "unread") == 0) {
    struct reader *r = find_reader(a);
    if (r) forget(r, CTL_RELEASED);
    reply("ok");
  } else if (got == 2 && strcmp(op, "drop") == 0 && a > DATA_FD) {
    struct stat st;
    int held = 0;
    for (struct reader *r = readers; r; r = r->next) held |= r->fd == a;
    if (!held && is_ptmx((int)a, &st)) close((int)a);
    reply("ok");
  } else reply("err bad request");
}

int main(void) {
  prctl(PR_SET_NAME, "bianbu-pty-ctl");
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  /* Nothing inherited above stdio is ours but the data pipe (descriptor 3 was this program). */
  for (int fd = 3; fd < 1024; fd++)
    if (fd != DATA_FD) close(fd);
  service = pidfd_open(getppid());
  ep = epoll_create1(EPOLL_CLOEXEC);
  if (service < 0 || ep < 0) {
    fprintf(stderr, "pidfd_open of the service: %s\n", strerror(errno));
    return 71;
  }
  fcntl(service, F_SETFD, FD_CLOEXEC);
  fcntl(DATA_FD, F_SETFD, FD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &tag_requests};
  if (epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev) < 0) return 71;
  reply("ready");
  struct epoll_event evs[64];
  for (;;) {
    /* The next deadline: held output to send, or a quiet terminal to give back. */
    int64_t now = now_ms(), next = -1;
    for (struct reader *r = readers; r; r = r->next) {
      int64_t at = r->got ? r->first_at + FLUSH_MS : r->paused ? -1 : r->last_at + RELEASE_MS;
      if (at >= 0 && (next < 0 || at - now < next)) next = at > now ? at - now : 0;
    }
    int n = epoll_wait(ep, evs, 64, (int)next);
    if (n < 0 && errno != EINTR) return 72;
    /* Requests first: a pause takes effect before the terminals of this turn are read. */
    for (int i = 0; i < n; i++)
      if (evs[i].data.ptr == &tag_requests) read_requests();
    for (int i = 0; i < n; i++) {
      if (evs[i].data.ptr == &tag_requests) continue;
      else {
        struct reader *r = evs[i].data.ptr;
        /* A request of this turn may have ended it. */
        int live = 0;
        for (struct reader *x = readers; x; x = x->next) live |= x == r;
        if (live) read_reader(r);
      }
    }
    now = now_ms();
    for (struct reader *r = readers, *next_r; r; r = next_r) {
      next_r = r->next;
      if (r->got && now >= r->first_at + FLUSH_MS) send_data(r);
      if (!r->got && !r->paused && now >= r->last_at + RELEASE_MS) forget(r, CTL_RELEASED);
    }
  }
  return 0;
}
