/// Whether an Annex B access unit (NAL units after 00 00 01 start codes, as an RTSP camera's
/// frames reach cvhost) begins a picture a decoder can start at: an IDR slice (H.264 type 5), or
/// an IRAP picture (H.265 types 16 to 21). FFmpeg's RTP depacketizer does not flag them (there is
/// no parser on that path): a clip starts at one.
enum AnnexBKeyframes {
    static func isKeyframe(_ data: UnsafeRawBufferPointer, hevc: Bool) -> Bool {
        var i = 0
        while i + 3 < data.count {
            // A start code: 00 00 01 (a 4-byte 00 00 00 01 ends the same way).
            guard data[i] == 0, data[i + 1] == 0, data[i + 2] == 1 else {
                i += 1
                continue
            }
            let header = data[i + 3]
            if hevc {
                if (16...21).contains((header >> 1) & 0x3F) { return true }
            } else if header & 0x1F == 5 {
                return true
            }
            i += 3
        }
        return false
    }
}
