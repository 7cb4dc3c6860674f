import CVHostCore
import Foundation

/// A time of day, local (`--reset-counts-at 00:00`).
public struct DailyTime: Equatable, Sendable, CustomStringConvertible {
    public let hour: Int, minute: Int

    /// - Throws: UsageError for what is not HH:MM of a day.
    public init(_ text: String) throws(UsageError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) }), let h = Int(parts[0]), let m = Int(parts[1]),
              (0..<24).contains(h), (0..<60).contains(m) else {
            throw UsageError("--reset-counts-at \(text): give a local time of day as HH:MM (00:00 for midnight, 06:30)")
        }
        hour = h
        minute = m
    }

    public var description: String { String(format: "%02d:%02d", hour, minute) }

    /// The last moment at this time of day, local, not after `now`.
    func latest(atOrBefore now: Date, calendar: Calendar = .current) -> Date {
        let today = calendar.date(bySettingHour: hour, minute: minute, second: 0, of: now) ?? now
        return today <= now ? today : calendar.date(byAdding: .day, value: -1, to: today) ?? today
    }
}
