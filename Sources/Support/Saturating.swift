/// Arithmetic for values that come from outside (the bus, the server, the configuration):
/// Swift's `+` and `*` trap on overflow, and a trap here would be a remote crash. These clamp
/// to the type's range instead.
extension FixedWidthInteger {
    @inlinable public func adding(saturating other: Self) -> Self {
        let (r, overflow) = addingReportingOverflow(other)
        guard overflow else { return r }
        return other > 0 ? .max : .min
    }

    @inlinable public func subtracting(saturating other: Self) -> Self {
        let (r, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return r }
        return other > 0 ? .min : .max
    }

    @inlinable public func multiplied(saturating other: Self) -> Self {
        let (r, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return r }
        return (self < 0) == (other < 0) ? .max : .min
    }
}
