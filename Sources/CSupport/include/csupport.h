#pragma once
/// Names the calling thread (15 bytes at most are kept). pthread_setname_np needs _GNU_SOURCE,
/// which Swift's Glibc module does not expose.
void gb_set_thread_name(const char *name);
/// The calling thread's kernel id (for /proc/self/task/<tid>).
int gb_thread_id(void);
/// A non-blocking, close-on-exec eventfd (sys/eventfd.h is not in Swift's Glibc module).
int gb_eventfd(void);
/// prctl(PR_SET_DUMPABLE, 0): no core dump of this process (it holds the stream password) and no
/// ptrace attach by other processes of the same user. prctl is variadic, which Swift cannot
/// call. Returns 0, or the errno.
int gb_forbid_core_dumps(void);
#include <sys/types.h>
/// posix_spawn of `path` with nothing of this process it should not have: an empty signal mask,
/// every signal at its default action (this process blocks some and ignores SIGPIPE), only fds
/// 0–2 (posix_spawn_file_actions_addclosefrom_np, which Swift's Glibc module does not show; fd 1
/// replaced by `stdout_fd` when that is not -1), and in a process group of its own when
/// `own_group` (so the whole group can be stopped). Returns 0 or an errno.
int gb_spawn_clean(pid_t *pid, const char *path, char *const argv[], char *const envp[], int stdout_fd,
                   int own_group);
/// pipe2(fds, O_CLOEXEC): no child started meanwhile by another thread inherits it.
int gb_pipe_cloexec(int fds[2]);
/// pidfd_open(pid, 0): an fd that poll(2) reports readable once the child has exited; -1 and
/// errno when the kernel has none (before Linux 5.3).
int gb_pidfd_open(pid_t pid);
/// mallopt(M_MMAP_THRESHOLD, bytes): blocks from `bytes` up are mapped for themselves and given
/// back to the kernel when freed (malloc.h is not in Swift's Glibc module).
void gb_malloc_map_blocks_from(int bytes);
