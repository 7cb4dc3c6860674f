import CVHostCore

/// One part of a name a protocol reads (an MQTT topic level, a NATS subject token), made from a
/// name cvhost did not choose: an input's, a plugin's, a host's, an event's. Made scalar by
/// scalar, never by Swift's Characters: `+` followed by a combining accent is one Character that
/// is not `+`, yet its first byte is the `+` the broker reads as a wildcard. Control characters
/// (which brokers refuse in a name, and which would reach a subscriber's terminal) and Unicode
/// non-characters become `_` as the protocol's reserved ones do; an empty part is `_`; a part is
/// cut (at a scalar's end) to `maxBytes` of UTF-8 so that no name outgrows what the broker takes.
enum ProtocolNamePart {
    static let maxBytes = 200

    static func make(_ value: String?, reserved: (Unicode.Scalar) -> Bool) -> String {
        guard let value, !value.isEmpty else { return "_" }
        var out = String.UnicodeScalarView()
        var bytes = 0
        for scalar in value.unicodeScalars {
            let kept: Unicode.Scalar = reserved(scalar) || scalar.isControlCharacter || scalar.isNoncharacter ? "_" : scalar
            bytes += UTF8.width(kept)
            if bytes > maxBytes { break }
            out.append(kept)
        }
        return String(out)
    }
}
