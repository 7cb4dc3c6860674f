import CVHostCore
import Foundation
import Glibc

/// Plugins written in Python (`--plugin ./brightness.py`): what cvhost needs to run one.
///
/// A Python plugin runs in worker processes of the user's own `python3`, on a small runtime
/// module that cvhost ships (`python/cvhost/`: the API, and the worker that speaks cvhost's worker
/// protocol and maps frames with mmap). Nothing is compiled against Python, so any Python 3 and
/// any virtual environment work. Its info (name, options, pixel formats) is what the module
/// says when the runtime imports it (`python3 RUNTIME/cvhost/__main__.py describe FILE`): cvhost checks option
/// values against it before the plugin runs, as it does a C plugin's descriptor.
public enum PythonPlugin {
    /// A file cvhost runs as a Python plugin.
    public static func isPythonFile(_ path: String) -> Bool { path.hasSuffix(".py") }

    /// The interpreter: $CVHOST_PYTHON, else the active virtual environment's ($VIRTUAL_ENV/bin/python3),
    /// else `python3` on the PATH, as an absolute path (workers are started without a PATH search).
    static func interpreter(environment: [String: String] = ProcessInfo.processInfo.environment) throws(PluginLoadError) -> String {
        if let given = environment["CVHOST_PYTHON"], !given.isEmpty {
            guard let found = resolve(given, environment: environment) else {
                throw PluginLoadError(.createFailed, "CVHOST_PYTHON=\(given): no such program; give the path of a python3")
            }
            return found
        }
        if let venv = environment["VIRTUAL_ENV"], !venv.isEmpty, access(venv + "/bin/python3", X_OK) == 0 {
            return PathText.absolute(venv + "/bin/python3")
        }
        guard let found = resolve("python3", environment: environment) else {
            throw PluginLoadError(.createFailed, "a Python plugin needs python3, and there is none on the PATH: install it (apt-get install python3) or set CVHOST_PYTHON")
        }
        return found
    }

    /// The program's absolute path (its workers run in the plugin's folder, not this one).
    private static func resolve(_ program: String, environment: [String: String]) -> String? {
        if program.contains("/") { return access(program, X_OK) == 0 ? PathText.absolute(program) : nil }
        let folders = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":")
        return folders.map { "\($0)/\(program)" }.first { access($0, X_OK) == 0 }.map(PathText.absolute)
    }

    /// The folder holding the runtime's `cvhost` package: $CVHOST_PYTHON_RUNTIME, the build's
    /// resources beside the executable, or an installation's lib/cvhost/python.
    static func runtimeFolder() throws(PluginLoadError) -> String {
        let exe = PluginLoader.executableFolder()
        let candidates = [ProcessInfo.processInfo.environment["CVHOST_PYTHON_RUNTIME"],
                          exe + "/cvhost_CVHostPlugins.resources/python",
                          exe + "/../lib/cvhost/python"].compactMap { $0 }
        guard let folder = candidates.first(where: { FileManager.default.fileExists(atPath: $0 + "/cvhost/_worker.py") }) else {
            throw PluginLoadError(.notFound, "cvhost's Python runtime is missing (looked in \(candidates.joined(separator: ", "))): reinstall cvhost")
        }
        return folder
    }

    /// The environment of the runtime: the user's, with the runtime's folder first on PYTHONPATH
    /// (so that plugins `import cvhost`), and no .pyc files written beside a user's plugin.
    static func environment(runtime: String, base: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        var environment = base
        environment["PYTHONPATH"] = [runtime, base["PYTHONPATH"]].compactMap { $0 }.filter { !$0.isEmpty }.joined(separator: ":")
        environment["PYTHONDONTWRITEBYTECODE"] = "1"
        // Tracebacks and print() reach cvhost's stderr as they happen.
        environment["PYTHONUNBUFFERED"] = "1"
        // Nothing from the folder the interpreter was started in is imported (Python 3.11+; older
        // ones put the script's own folder, the runtime's, first: also safe).
        environment["PYTHONSAFEPATH"] = "1"
        return environment
    }

    /// The interpreter's arguments that run the runtime with `command`: the runtime's entry by its
    /// path, not `-m cvhost`, which would put the current folder first on sys.path, where a
    /// `cv2.py`, `numpy.py` or `cvhost/` that another user left would be imported instead.
    static func runtimeArguments(runtime: String, _ command: [String]) -> [String] {
        [runtime + "/cvhost/__main__.py"] + command
    }

    /// `path` as an absolute path, and its folder: the worker's working folder, since it runs in
    /// the plugin's folder, never in the caller's (whoever can write there does not choose what
    /// it reads); the runtime adds that folder to sys.path when only its owner can change it.
    static func placed(_ path: String) -> (path: String, folder: String) {
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        return (absolute, (absolute as NSString).deletingLastPathComponent)
    }

    /// The worker that runs the plugin at `path`: `python3 RUNTIME/cvhost/__main__.py worker --preload
    /// FILE CHANNELS PARENT_PID`. It imports the file as it starts, before cvhost's hello comes.
    static func workerProgram(path: String) throws(PluginLoadError) -> WorkerProgram {
        let runtime = try runtimeFolder()
        let (absolute, folder) = placed(path)
        return WorkerProgram(executable: try interpreter(), arguments: runtimeArguments(runtime: runtime, ["worker", "--preload", absolute]),
                             environment: environment(runtime: runtime), workingFolder: folder)
    }

    /// How long importing a plugin may take to describe it (a model library's import can be slow).
    static let describeTimeoutSeconds = 60.0

    /// Imports the plugin in the runtime (in a process of its own) and reads what it declares.
    /// - Parameter warm: also start the plugin's first worker meanwhile, importing it too (WarmWorkers).
    /// - Throws: `PluginLoadError`: a syntax error or failed import names the file and line
    ///   (.invalidDescriptor, exit 14); an API version this runtime does not have (.abiMismatch, 13).
    ///   A stop asked for meanwhile (`stopRequested`) ends the import at once (.createFailed).
    static func describe(path: String, warm: Bool = false, stopRequested: () -> Bool = { false }) throws(PluginLoadError) -> PluginInfo {
        let runtime = try runtimeFolder()
        let python = try interpreter()
        let (absolute, folder) = placed(path)
        // A worker that cannot start now is started later, as any other: nothing is said of it here.
        let program = warm ? try? workerProgram(path: path) : nil
        let worker = program.flatMap { try? WorkerProcess(program: $0, instances: 1, generation: 1) }
        var described = false
        defer {
            if let worker, let program, described {
                WarmWorkers.park(worker, of: program)
            } else if let worker {
                worker.kill()
                worker.reap()
            }
        }
        let ending: CapturedRun.Ending
        do {
            ending = try CapturedRun.run(python, runtimeArguments(runtime: runtime, ["describe", absolute]), environment: environment(runtime: runtime),
                                         folder: folder, timeoutSeconds: describeTimeoutSeconds, stopRequested: stopRequested)
        } catch {
            throw PluginLoadError(.createFailed, "cannot run \(python) for plugin \(path)", cause: error)
        }
        let status: Int32, printedBytes: [UInt8], saidBytes: [UInt8]
        switch ending {
        case .stopped:
            throw PluginLoadError(.createFailed, "stopped while \(python) imported plugin \(path)")
        case .timedOut:
            throw PluginLoadError(.createFailed, "plugin \(path) took more than \(Int(describeTimeoutSeconds)) s to import: it was stopped")
        case .exited(let s, let out, let err):
            (status, printedBytes, saidBytes) = (s, out, err)
        }
        let said = String(decoding: saidBytes, as: UTF8.self)
        let lastLine = said.split(separator: "\n").last.map(String.init) ?? ""
        let printed = printedBytes.split(separator: UInt8(ascii: "\n")).last.map { Data($0) } ?? Data()
        guard status == 0, let json = try? JSONSerialization.jsonObject(with: printed) as? [String: Any] else {
            if !said.isEmpty { FileHandle.standardError.write(Data(said.utf8)) }
            throw PluginLoadError(.createFailed, "plugin \(path) could not be described by \(python) (exit status \(status))"
                                  + (lastLine.isEmpty ? "" : ": \(lastLine)"))
        }
        // A runtime of another cvhost (CVHOST_PYTHON_RUNTIME) would start, then misread every
        // message: its protocol is checked before anything runs.
        let spoken = json["protocol"] as? Int ?? 1
        guard spoken == Int(WorkerMessage.protocolVersion) else {
            throw PluginLoadError(.abiMismatch, "the Python runtime at \(runtime) speaks worker protocol \(spoken) and this cvhost "
                                  + "\(WorkerMessage.protocolVersion): it is another cvhost's; unset CVHOST_PYTHON_RUNTIME or point it at this cvhost's")
        }
        if let kind = json["error"] as? String {
            throw PluginLoadError(PluginLoadError.Kind(rawValue: kind) ?? .invalidDescriptor, json["message"] as? String ?? "plugin \(path) is not valid")
        }
        let info = try PluginInfo(python: json, path: path)
        described = true
        return info
    }
}

/// The program a worker process runs: this executable again (C, C++, Rust, Swift plugins), or a
/// Python interpreter on cvhost's runtime module (Python plugins). Its last two arguments are
/// added when it starts: the number of channels (descriptors 3, 4, ...) and cvhost's pid.
struct WorkerProgram: Sendable {
    let executable: String
    let arguments: [String]
    let environment: [String: String]
    /// The worker's working folder; nil: cvhost's.
    var workingFolder: String? = nil

    /// This executable in worker mode (PluginWorker).
    static func host() -> WorkerProgram {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var environment = ProcessInfo.processInfo.environment
        // The Swift runtime's backtracer would print pages for a plugin's crash; cvhost says it in one line.
        environment["SWIFT_BACKTRACE"] = "enable=no"
        return WorkerProgram(executable: exe, arguments: [PluginWorker.flag], environment: environment)
    }
}

extension PluginInfo {
    /// The info a Python plugin declares (`cvhost describe`'s JSON), checked as a C descriptor is.
    init(python d: [String: Any], path: String) throws(PluginLoadError) {
        func invalid(_ why: String) -> PluginLoadError { PluginLoadError(.invalidDescriptor, "plugin \(path) is not usable: \(why)") }
        guard let name = d["name"] as? String else { throw invalid("it has no name") }
        guard PluginInfo.isValidName(name) else {
            throw PluginLoadError(.invalidName, "plugin \(path) has the invalid name '\(name)': names are [a-z][a-z0-9_-], at most 32 characters")
        }
        var formats: [PixelFormat] = []
        for text in d["pixel_formats"] as? [String] ?? [] {
            guard let f = PixelFormat(name: text) else { throw invalid("pixel format \(text) is not one cvhost knows") }
            formats.append(f)
        }
        var options: [PluginOptionSpec] = []
        for o in d["options"] as? [[String: Any]] ?? [] {
            guard let oname = o["name"] as? String, !oname.isEmpty,
                  oname.utf8.allSatisfy({ ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 })
            else { throw invalid("option name '\(o["name"] ?? "")' is not [a-z0-9_]+") }
            guard let type = (o["type"] as? String).flatMap(PluginOptionSpec.ValueType.init(rawValue:)) else {
                throw invalid("option \(oname) has no type cvhost knows")
            }
            let range = (o["min"] as? Double).flatMap { lo in (o["max"] as? Double).flatMap { hi in lo <= hi ? lo...hi : nil } }
            let spec = PluginOptionSpec(name: oname, type: type, defaultValue: o["default"] as? String ?? "", help: o["help"] as? String ?? "",
                                        range: range, choices: o["choices"] as? [String] ?? [])
            do { _ = try spec.normalize(spec.defaultValue, plugin: name) } catch {
                throw invalid("the default of option \(oname) is not valid (\(error))")
            }
            options.append(spec)
        }
        let names = options.map(\.name)
        if let dup = names.first(where: { n in names.filter { $0 == n }.count > 1 }) { throw invalid("option \(dup) is declared twice") }
        if let reserved = names.first(where: { n in PluginConfiguration.hostOptions.contains { $0.name == n } }) {
            throw invalid("its option '\(reserved)' has the name of a host option (\(PluginConfiguration.hostOptions.map(\.name).joined(separator: ", "))): rename it")
        }
        let api = d["api_version"] as? [Int] ?? [0, 0]
        self.init(name: name, version: d["version"] as? String ?? "0", summary: d["description"] as? String ?? "", path: path,
                  abiMajor: api.first ?? 0, abiMinor: api.dropFirst().first ?? 0, pixelFormats: formats,
                  isStateless: d["stateless"] as? Bool ?? false, hints: CaptureHints(), options: options,
                  hasFlush: d["flush"] as? Bool ?? false, hasOrderedStage: false, runtime: .python,
                  takesBatches: d["batch"] as? Bool ?? false)
    }
}
