import CVHostCore

/// The newest keyframes of an input's record stream (`--input ...,record=URL`), for snapshots taken
/// from it (`--snapshots DIR:from=record`): a keyframe is a picture on its own, decoded only when an
/// event asks for it (KeyframeDecoder). Fed the record stream's packets (their times already the
/// input's, RecordStream), on its thread.
final class RecordKeyframes: EncodedPacketObserver {
    private let kept = Locked<[EncodedPacket]>([])
    /// Keyframes kept at most, and how far back: a camera's keyframe every 1-4 s.
    static let most = 16
    static let seconds = 30.0

    func encodedPacket(_ packet: EncodedPacket) {
        guard packet.isKeyframe else { return }
        kept.withLock { k in
            k.append(packet)
            let oldest = packet.ptsNs.subtractingClamped(Int64(Self.seconds * 1e9))
            k.removeAll { $0.ptsNs < oldest }
            if k.count > Self.most { k.removeFirst(k.count - Self.most) }
        }
    }

    /// A new connection: its keyframes may be of another format.
    func encodedStreamEnded() { kept.withLock { $0.removeAll() } }

    /// The keyframe nearest `ptsNs` (the input's media time), if any is kept.
    func nearest(to ptsNs: Int64) -> EncodedPacket? {
        kept.withLock { k in k.min { abs($0.ptsNs.subtractingClamped(ptsNs)) < abs($1.ptsNs.subtractingClamped(ptsNs)) } }
    }
}
