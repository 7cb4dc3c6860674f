import Foundation

/// Builds test plugins from C with the system compiler against the public header alone, as a
/// plugin author would.
public enum PluginFixtures {
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    public static let includeDir = packageRoot + "/Sources/CVHostPluginABI/include"
    public static let brokenSource = packageRoot + "/Tests/Fixtures/broken-plugin.c"
    /// The header as ABI 2.0 shipped it, never edited: for plugins "built before" later fields.
    public static let throwingSource = packageRoot + "/Tests/Fixtures/throwing-plugin.cpp"
    public static let frozenABI20IncludeDir = packageRoot + "/Tests/Fixtures/abi-2.0"

    /// A fresh folder for built plugins.
    public static func makeFolder() -> String {
        TestFolders.make("plugins")
    }

    /// Compiles `source` into `folder/libcvhost-<name>.so` with the given -D defines.
    @discardableResult
    public static func build(name: String, defines: [String] = [], source: String = brokenSource, in folder: String,
                      fileName: String? = nil, includeDir: String = includeDir) throws -> String {
        let out = folder + "/" + (fileName ?? "libcvhost-\(name).so")
        // Built under another name and renamed into place: tests running side by side may build
        // the same plugin, and a cvhost must never load one half written ("not an ELF file").
        let building = out + ".building-\(UUID().uuidString)"
        try Tool.check(source.hasSuffix(".cpp") ? "c++" : "cc", ["-shared", "-fPIC", "-fvisibility=hidden", "-O1", "-I", includeDir, "-DPLUGIN_NAME=\"\(name)\""]
                       + defines.map { "-D\($0)" } + [source, "-o", building])
        guard rename(building, out) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: out])
        }
        return out
    }
}
