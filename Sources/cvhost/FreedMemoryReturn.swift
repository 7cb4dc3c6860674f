import Dispatch
import Glibc

/// Gives the memory the process has freed back to the system every `seconds`: glibc's
/// `malloc_trim(0)`, which returns the free pages inside every arena (not only those at an
/// arena's top, as `free` does). A run's threads (capture, delivery, encoders, the broker
/// clients') each allocate and free in arenas of their own; what one frees is kept by its arena
/// for its next allocations, and the pages between live blocks stay resident. Measured with
/// `benchmarks/load_soak.py` (8 inputs, snapshots, clips, a NATS output, run-time changes):
/// heaptrack found at most 18.6 MB of the heap alive while the process's RSS grew by 37 MB a
/// minute after its warm-up, all of it freed memory kept by the arenas.
enum FreedMemoryReturn {
    static let seconds = 30.0

    /// Starts returning memory every `seconds` for the rest of the process.
    static func start() {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "cvhost.malloc-trim", qos: .background))
        timer.schedule(deadline: .now() + seconds, repeating: seconds, leeway: .seconds(5))
        timer.setEventHandler { _ = mallocTrim(0) }
        timer.resume()
        started = timer
    }

    /// glibc's malloc_trim (in <malloc.h>, which Swift's Glibc module leaves out).
    @_silgen_name("malloc_trim")
    private static func mallocTrim(_ pad: Int) -> Int32

    /// Held for the life of the process.
    nonisolated(unsafe) private static var started: DispatchSourceTimer?
}
