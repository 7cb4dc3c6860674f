/*
 * CWorkerIPC: what a plugin's worker process (isolation=process) needs from C: starting it with
 * exactly the descriptors it should have, passing descriptors over a unix socket (SCM_RIGHTS,
 * whose CMSG macros Swift cannot import), and the worker's own restrictions.
 */
#ifndef CWORKERIPC_H
#define CWORKERIPC_H

#include <stddef.h>
#include <sys/types.h>

/* Starts `exe` with `argv` and `envp` as a worker: fds[i] becomes descriptor 3 + i, every other descriptor
 * above 2 is closed, stdin is /dev/null, stdout and stderr are `err_fd` (-1: this process's stderr; a
 * plugin's printf can never reach the JSON lines), all signals have their default action and none is blocked, and the
 * worker is in a process group of its own (a Ctrl-C on the terminal is cvhost's to handle, not the
 * worker's; and its group is what cvhost kills when the worker ends, so that what the plugin started
 * ends with it). `cwd`, when not NULL, is the worker's working folder. Returns 0 and the pid, or an
 * errno value. */
int cvhost_spawn_worker(const char *exe, char *const argv[], char *const envp[], const int *fds, int nfds, const char *cwd,
                        int err_fd, pid_t *pid);

/* Starts `exe` as a short helper whose output is read (a Python plugin's description): stdin is
 * /dev/null, stdout is `out_fd`, stderr is `err_fd`, no other descriptor above 2, default signals,
 * none blocked, a process group of its own, working folder `cwd`. Returns 0 and the pid, or an
 * errno value. (Not Foundation's Process: it leaked at every run, and left its children's
 * descriptors to one another.) */
int cvhost_spawn_captured(const char *exe, char *const argv[], char *const envp[], const char *cwd, int out_fd, int err_fd,
                          pid_t *pid);

/* Sends one message with `nfds` descriptors attached (0..4). Returns bytes sent or -errno
 * (-EINTR: a signal came first; SystemCall.retryingNegated calls it again). */
ssize_t cvhost_send_message(int sock, const void *buf, size_t len, const int *fds, int nfds);

/* Receives one message and up to `maxfds` descriptors (close-on-exec), waiting at most
 * `timeout_ms` (-1: for ever). Returns bytes received, 0 at end of stream, -ETIMEDOUT, or -errno
 * (-EINTR: a signal came first, nothing was received). */
ssize_t cvhost_receive_message(int sock, void *buf, size_t len, int *fds, int maxfds, int *nfds, int timeout_ms);

/* Called first in the worker: no new privileges (setuid binaries, file capabilities) for it or
 * what it runs, and SIGKILL when cvhost (`parent`) dies. Returns 0 or an errno value. */
int cvhost_worker_restrict(pid_t parent);

/* Makes this process a child subreaper (PR_SET_CHILD_SUBREAPER): a process that a worker started and
 * that left the worker's process group (setsid, a double fork) is reparented to cvhost when its
 * parent ends, not to init, so cvhost can still find and end it. Returns 0 or an errno value. */
int cvhost_become_subreaper(void);

#endif
