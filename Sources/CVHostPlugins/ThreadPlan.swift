import CVHostCore
import Glibc

/// How many threads each plugin instance of a run may use: the cores cvhost may use, divided
/// among every instance of every plugin of the run (a shared plugin's counted once), never the
/// cores times the inputs. A plugin that declares an integer option `threads` (the detect plugin:
/// onnxruntime's threads) and was not given one gets its share (at least 1).
public struct ThreadPlan: Sendable, Equatable {
    public let cores: Int
    public let instances: Int

    public init(cores: Int = ThreadPlan.usableCores(), instances: Int) {
        self.cores = max(1, cores)
        self.instances = max(1, instances)
    }

    /// Each instance's threads.
    public var threadsPerInstance: Int { max(1, cores / instances) }

    /// The option a plugin takes its threads by, when it declares one.
    public static let option = "threads"

    /// `options` with `threads=N` added when `plugin` takes `threads` and the user gave none.
    public func options(for plugin: PluginInfo, _ options: [(key: String, value: String)]) -> [(key: String, value: String)] {
        guard plugin.options.contains(where: { $0.name == Self.option && $0.type == .int }),
              !options.contains(where: { $0.key == Self.option && $0.value != "0" }) else { return options }
        return options.filter { $0.key != Self.option } + [(Self.option, String(threadsPerInstance))]
    }

    /// The cores this process may use: its affinity (taskset, a service's CPUAffinity), and no more
    /// than its cgroup's CPU quota (a container's --cpus, a service's CPUQuota), rounded up.
    public static func usableCores() -> Int {
        // The affinity as /proc says it ("0-3,6"): sched_getaffinity is not in Swift's Glibc.
        var n = 0
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
           let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") }) {
            for part in line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces).split(separator: ",") {
                let ends = part.split(separator: "-").compactMap { Int($0) }
                n += ends.count == 2 ? max(0, ends[1] - ends[0] + 1) : ends.count
            }
        }
        if n <= 0 { n = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
        if let cgroup = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
           let line = cgroup.split(separator: "\n").first(where: { $0.hasPrefix("0::") }),
           let max = try? String(contentsOfFile: "/sys/fs/cgroup" + line.dropFirst(3) + "/cpu.max", encoding: .utf8) {
            let parts = max.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
            if parts.count == 2, let quota = Int(parts[0]), let period = Int(parts[1]), period > 0 {
                n = min(n, Swift.max(1, (quota + period - 1) / period))
            }
        }
        return n
    }
}
