import CVHostFuzzTargets
import Foundation

// Two builds of one file:
//  - for libFuzzer (scripts/fuzz.sh: -sanitize=fuzzer,address -DFUZZING): main hands over to
//    libFuzzer's driver, which calls the target named by $CVHOST_FUZZ_TARGET with each input;
//  - else (swift build): `cvhost-fuzz TARGET FILE...` runs the target once on each file, to
//    replay a finding by hand.

@main
enum FuzzEntry {
    static func main() {
        #if FUZZING
            guard let name = ProcessInfo.processInfo.environment["CVHOST_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
                fail("set CVHOST_FUZZ_TARGET to one of \(names)")
            }
            chosen = target
            var argc = CommandLine.argc
            var argv = CommandLine.unsafeArgv
            exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                FuzzEntry.chosen?.run(UnsafeBufferPointer(start: data, count: size))
                return 0
            })
        #else
            let arguments = CommandLine.arguments.dropFirst()
            guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
                fail("usage: cvhost-fuzz TARGET FILE...   (targets: \(names))")
            }
            for file in arguments.dropFirst() {
                guard let data = FileManager.default.contents(atPath: file) else { fail("cannot read \(file)") }
                target.run([UInt8](data))
                print("\(file): passed")
            }
        #endif
    }

    nonisolated(unsafe) static var chosen: FuzzTarget?
    static var names: String { FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ") }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("cvhost-fuzz: \(message)\n".utf8))
        exit(64)
    }
}

#if FUZZING
/// libFuzzer's entry for a program with a main of its own (compiler-rt's FuzzerInterface.h).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
                         _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt
#endif
