import Glibc

/// cvhost's stdout belongs to cvhost alone: the JSON lines go to a private duplicate of it, and
/// descriptor 1 itself is pointed at stderr before any plugin is loaded, so whatever a plugin or
/// a library it uses writes to stdout (printf, write(1, …), a constructor's banner) lands on
/// stderr and can never split or corrupt a JSON line.
public enum StandardOutput {
    /// Moves stdout to a private descriptor (close-on-exec) and points descriptor 1 at stderr.
    /// - Returns: the descriptor to write the JSON lines to (-1 when stdout was closed: writes
    ///   then fail as they would have).
    ///
    /// A descriptor 0 or 2 that cvhost was started without (`2>&-`) is pointed at /dev/null
    /// first: else descriptor 1 could not follow stderr (a plugin's printf would then reach the
    /// JSON lines), and the next file cvhost opened would become "stderr" and get its messages.
    public static func claim() -> Int32 {
        fflush(nil)
        let results = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)
        for fd in [STDIN_FILENO, STDERR_FILENO] where fcntl(fd, F_GETFD) < 0 {
            let null = open("/dev/null", O_RDWR)
            if null >= 0 && null != fd {
                dup2(null, fd)
                close(null)
            }
        }
        dup2(STDERR_FILENO, STDOUT_FILENO)
        return results
    }
}
