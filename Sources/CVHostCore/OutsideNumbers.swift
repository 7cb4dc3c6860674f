/// Numbers that come from outside cvhost (a plugin's result, a stream's timestamps, an index or a
/// spool on disk, a request) turned into integers and added without a trap. Swift traps on a
/// Double out of an integer's range and on an overflowing `+`: one plugin's `x: 1e300`, or one
/// stream's timestamp near Int64.max, must not end every camera. Where such a number is used,
/// it goes through one of these, and a value that is no value (nil) is the caller's to count.

extension FixedWidthInteger {
    /// `value` rounded by `rule`, or nil when it is not finite or does not fit.
    @inlinable
    public init?(checked value: Double, _ rule: FloatingPointRoundingRule = .towardZero) {
        let rounded = value.rounded(rule)
        // Self.max as a Double may round up past it (Int64.max becomes 2^63): `<`, not `<=`.
        guard rounded.isFinite, rounded >= Double(Self.min), rounded < Double(Self.max) else { return nil }
        self.init(rounded)
    }

    /// `value` rounded by `rule` and clamped to `range` (NaN: the range's lower bound).
    @inlinable
    public init(clamped value: Double, _ rule: FloatingPointRoundingRule = .towardZero, to range: ClosedRange<Self>) {
        let rounded = value.rounded(rule)
        if rounded.isNaN || rounded <= Double(range.lowerBound) {
            self = range.lowerBound
        } else if rounded >= Double(range.upperBound) {
            self = range.upperBound
        } else {
            self.init(rounded)
        }
    }

    /// `self + other`, held at `.max` or `.min` rather than overflowing.
    @inlinable
    public func addingClamped(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }

    /// `self - other`, held at `.max` or `.min` rather than overflowing.
    @inlinable
    public func subtractingClamped(_ other: Self) -> Self {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        return other > 0 ? .min : .max
    }

    /// `self * other`, held at `.max` or `.min` rather than overflowing.
    @inlinable
    public func multipliedClamped(by other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) == (other < 0) ? .max : .min
    }
}

extension Sequence where Element: FixedWidthInteger {
    /// The sum, held at the type's bounds rather than overflowing (sizes read from a file).
    @inlinable
    public func clampedSum() -> Element { reduce(0) { $0.addingClamped($1) } }
}
