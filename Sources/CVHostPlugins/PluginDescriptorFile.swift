import CVHostCore
import CVHostPluginABI

/// A plugin file's descriptor, read from the file as data: the exported `cvhost_plugin` symbol
/// found in its ELF symbol table and the bytes it and what it points at hold in the file. No code
/// of the plugin runs (no constructor, no entry point). This reads; `PluginInfo` checks what was
/// read means something. What is refused here is a file that cannot hold a descriptor of ABI 2:
/// not a shared object for this processor, no descriptor, another ABI major, a descriptor or a
/// string that is not in the file's data.
struct PluginDescriptorFile {
    let path: String
    /// The descriptor's own struct_size, and the ABI its header had.
    let declaredSize: Int
    let abiMajor: Int
    let abiMinor: Int
    /// The descriptor as the file holds it; its pointers are addresses in the file, read through `text` and the others.
    let descriptor: cvhost_plugin_descriptor
    private let image: ELFImage

    /// The symbol an ABI 1 plugin exported: recognised only to say what to do about it.
    static let abi1EntrySymbol = "cvhost_plugin_entry"

    /// The size of ABI 2.0's descriptor, the smallest this host accepts: up to and including destroy.
    static let descriptorSize20 = MemoryLayout<cvhost_plugin_descriptor>.offset(of: \.destroy)! + MemoryLayout<UnsafeRawPointer>.size

    /// - Throws: `PluginLoadError` (.notSharedObject, .noEntrySymbol, .abiMismatch, .invalidDescriptor).
    init(path: String) throws(PluginLoadError) {
        self.path = path
        do {
            image = try ELFImage(path: path)
        } catch {
            throw PluginLoadError(.notSharedObject, "cannot load plugin \(path): \(error)")
        }
        guard image.machine == ELFImage.hostMachine else {
            throw PluginLoadError(.notSharedObject, "cannot load plugin \(path): it is built for another processor (ELF machine \(image.machine))")
        }
        guard let symbol = image.symbol(CVHOST_PLUGIN_SYMBOL) else {
            if image.symbol(Self.abi1EntrySymbol) != nil {
                throw PluginLoadError(.abiMismatch,
                                      "plugin \(path) was built for plugin ABI 1, this cvhost needs ABI \(CVHOST_PLUGIN_ABI_MAJOR): rebuild it against this cvhost's cvhost/plugin.h (the descriptor is now the exported constant \(CVHOST_PLUGIN_SYMBOL))")
            }
            throw PluginLoadError(.noEntrySymbol,
                                  "\(path) is not a cvhost plugin: it exports no \(CVHOST_PLUGIN_SYMBOL) descriptor (define it CVHOST_PLUGIN_EXPORT const)")
        }
        // struct_size and the version come first and never move: read them before the rest.
        guard let head = image.bytes(at: symbol.address, count: 8) else { throw Self.invalid(path, "its descriptor is not in the file's data") }
        declaredSize = Int(head.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) })
        abiMajor = Int(head.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4, as: UInt16.self) })
        abiMinor = Int(head.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 6, as: UInt16.self) })
        // An initializer without CVHOST_PLUGIN_DESCRIPTOR_HEADER leaves both at zero: not an old ABI.
        guard abiMajor != 0 || declaredSize != 0 else {
            throw Self.invalid(path, "its descriptor does not begin with CVHOST_PLUGIN_DESCRIPTOR_HEADER (its struct_size and ABI version are 0): "
                               + "put CVHOST_PLUGIN_DESCRIPTOR_HEADER first in the initializer")
        }
        guard abiMajor == Int(CVHOST_PLUGIN_ABI_MAJOR) else {
            throw PluginLoadError(.abiMismatch,
                                  "plugin \(path) was built for plugin ABI \(abiMajor).\(abiMinor), this cvhost needs ABI \(CVHOST_PLUGIN_ABI_MAJOR): rebuild it against this cvhost's cvhost/plugin.h")
        }
        guard declaredSize >= Self.descriptorSize20 else {
            throw Self.invalid(path, "its descriptor is \(declaredSize) bytes, smaller than ABI 2.0's \(Self.descriptorSize20): "
                               + "rebuild it against cvhost/plugin.h, with CVHOST_PLUGIN_DESCRIPTOR_HEADER first in the initializer")
        }
        // The symbol's size is the file's word: compared as it is (as an Int it could trap).
        guard symbol.size == 0 || symbol.size >= UInt64(declaredSize),
              let d = image.structure(cvhost_plugin_descriptor.self, at: symbol.address, size: declaredSize)
        else { throw Self.invalid(path, "its descriptor is not \(declaredSize) bytes of the file's data") }
        descriptor = d
    }

    /// The refusal of a descriptor that is there but not usable (exit 14): `what` names the field and the fix.
    static func invalid(_ path: String, _ what: String) -> PluginLoadError {
        PluginLoadError(.invalidDescriptor, "plugin \(path) is not usable: \(what)")
    }

    func invalid(_ what: String) -> PluginLoadError { Self.invalid(path, what) }

    /// Why a field must be a constant: cvhost reads the descriptor from the file, not from the running plugin.
    static let readFromFile = "cvhost reads the descriptor from the file without running the plugin, so a value made at run time, such as s.c_str() in C++, is not there"
    /// What an option table read past its end usually means.
    static let countHint = "is .option_count larger than the options array? write .option_count = CVHOST_COUNT(options)"

    /// The string a descriptor's pointer points at; nil for NULL. - Throws: when it is not a string in the file.
    func text(_ p: UnsafePointer<CChar>?, _ what: String) throws(PluginLoadError) -> String? {
        guard let p else { return nil }
        guard let s = image.string(at: UInt64(UInt(bitPattern: p))) else {
            throw invalid("its \(what) is not a string in the file: make it a string constant (\(Self.readFromFile))")
        }
        return s
    }

    /// The pixel format codes the descriptor lists (1 to 64 of them).
    func pixelFormatCodes() throws(PluginLoadError) -> [UInt32] {
        let count = Int(descriptor.pixel_format_count)
        guard count >= 1, count <= 64, let at = descriptor.pixel_formats,
              let raw = image.bytes(at: UInt64(UInt(bitPattern: at)), count: 4 * count)
        else { throw invalid("it lists no pixel formats: point .pixel_formats at a constant array and set .pixel_format_count (1 to 64)") }
        return (0..<count).map { i in raw.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self) } }
    }

    /// The capture hints, when the descriptor has them.
    func hints() throws(PluginLoadError) -> cvhost_capture_hints? {
        guard let at = descriptor.hints else { return nil }
        let address = UInt64(UInt(bitPattern: at))
        guard let size = image.bytes(at: address, count: 4).map({ $0.withUnsafeBytes { Int($0.loadUnaligned(as: UInt32.self)) } }),
              size >= MemoryLayout<cvhost_capture_hints>.size,
              let h = image.structure(cvhost_capture_hints.self, at: address, size: size)
        else { throw invalid("its capture hints are not a cvhost_capture_hints: set their .struct_size = sizeof(cvhost_capture_hints)") }
        return h
    }

    /// The option table (at most 256 entries of option_spec_size bytes each).
    func optionSpecs() throws(PluginLoadError) -> [cvhost_option_spec] {
        let d = descriptor
        guard d.option_count > 0 else { return [] }
        guard let table = d.options else { throw invalid("option_count is \(d.option_count) but .options is NULL: point it at the option array") }
        let stride = Int(d.option_spec_size)
        guard stride >= MemoryLayout<cvhost_option_spec>.size else {
            throw invalid("option_spec_size is \(stride): set .option_spec_size = sizeof(cvhost_option_spec)")
        }
        guard d.option_count <= 256 else { throw invalid("it declares \(d.option_count) options, at most 256 are allowed") }
        return try (0..<Int(d.option_count)).map { i throws(PluginLoadError) in
            guard let spec = image.structure(cvhost_option_spec.self, at: UInt64(UInt(bitPattern: table)) + UInt64(i * stride), size: stride)
            else { throw invalid("option \(i) is not in the file's data (\(Self.countHint))") }
            return spec
        }
    }
}
