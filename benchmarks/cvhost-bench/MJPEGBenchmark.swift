import CVHostCore
import CVHostV4L2
import Foundation

/// `cvhost-bench --mjpeg FILE WIDTH HEIGHT`: decodes each JPEG of an MJPEG file (concatenated
/// JPEGs) with the decoder a camera's MJPEG frames go through (MJPEGDecoder), to I420 and its
/// grey view, and prints one JSON line: frames, refused, CPU seconds. Run by benchmarks/mjpeg_decode.py.
enum MJPEGBenchmark {
    static func run(file: String, width: Int, height: Int) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        let frames = split(data)
        let decoder = try MJPEGDecoder(width: width, height: height, device: file)
        var decoded = 0, refused = 0
        var checksum = 0
        let before = HostBenchmark.cpuSeconds()
        for frame in frames {
            switch frame.withUnsafeBytes({ decoder.decode($0) }) {
            case .frame(let pixels):
                decoded += 1
                // What a barcode plugin reads: the grey view (no copy); touch it so nothing is skipped.
                checksum &+= Int(pixels.converted(to: .gray8).planes[0].base.load(as: UInt8.self))
            case .corrupt:
                refused += 1
            }
        }
        let cpu = HostBenchmark.cpuSeconds() - before
        print("{\"frames\": \(decoded), \"failed\": \(refused), \"cpu_seconds\": \(cpu), \"checksum\": \(checksum)}")
    }

    /// The JPEGs of an MJPEG file: each ends with FF D9 (inside a JPEG's coded data an FF is
    /// always followed by 00 or a restart marker, so FF D9 is its end).
    static func split(_ data: Data) -> [Data] {
        var out: [Data] = []
        data.withUnsafeBytes { raw in
            var begin = 0
            var i = 0
            while i + 1 < raw.count {
                if raw[i] == 0xFF && raw[i + 1] == 0xD9 {
                    out.append(Data(raw[begin..<(i + 2)]))
                    begin = i + 2
                    i += 2
                } else {
                    i += 1
                }
            }
        }
        return out
    }
}
