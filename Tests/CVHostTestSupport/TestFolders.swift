import Foundation

/// Every file the tests make lives under one folder per test process, removed when the process
/// exits, so repeated runs do not fill /tmp. CVHOST_KEEP_TEST_FILES=1 keeps it (its path is
/// printed on stderr) for looking at what a failed run left, e.g. the camera steps' output.
public enum TestFolders {
    public static let root: String = {
        let dir = NSTemporaryDirectory() + "cvhost-tests-\(getpid())"
        try? FileManager.default.removeItem(atPath: dir)  // a folder left by an earlier process with this pid
        try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        if ProcessInfo.processInfo.environment["CVHOST_KEEP_TEST_FILES"] == "1" {
            FileHandle.standardError.write(Data("test files are kept in \(dir)\n".utf8))
        } else {
            atexit { try? FileManager.default.removeItem(atPath: TestFolders.root) }
        }
        return dir
    }()

    /// A new, empty folder under `root` whose name starts with `prefix`.
    public static func make(_ prefix: String) -> String {
        let dir = root + "/\(prefix)-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }
}
