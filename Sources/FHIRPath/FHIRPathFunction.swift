import FHIRCore
/// The functions FHIRPath expressions may call: the normative library plus the FHIR additions.
/// Each knows its arity, which the parser checks, and which of its arguments are evaluated per item
/// of the input (`where(criteria)`) rather than once.
enum FHIRPathFunction: String, CaseIterable, Sendable {
    // Existence
    case empty, exists, all, allTrue, anyTrue, allFalse, anyFalse, subsetOf, supersetOf, count, distinct,
        isDistinct
    // Filtering and projection
    case `where`, select, `repeat`, repeatAll, ofType, coalesce
    // Subsetting
    case single, first, last, tail, skip, take, intersect, exclude
    // Combining
    case union, combine
    // Conversion
    case iif, toBoolean, convertsToBoolean, toInteger, convertsToInteger, toDecimal, convertsToDecimal,
        toString, convertsToString, toDate, convertsToDate, toDateTime, convertsToDateTime, toTime,
        convertsToTime, toQuantity, convertsToQuantity
    // Strings
    case indexOf, lastIndexOf, substring, startsWith, endsWith, contains, upper, lower, replace, matches,
        matchesFull, replaceMatches, length, toChars, encode, decode, escape, unescape, trim, split, join
    // Math
    case abs, ceiling, exp, floor, ln, log, power, round, sqrt, truncate
    // Tree navigation
    case children, descendants
    // Utility
    case trace, now, timeOfDay, today, lowBoundary, highBoundary, precision, comparable, not
    case yearOf, monthOf, dayOf, hourOf, minuteOf, secondOf, millisecondOf, timezoneOffsetOf, dateOf, timeOf
    // Types
    case `is`, `as`, type
    // Aggregates
    case aggregate, sum, min, max, avg, sort
    // FHIR additions
    case `extension`, resolve, hasValue, getValue, conformsTo, memberOf, htmlChecks
    // SDC additions (FHIRPathFunctions+SDC.swift)
    case weight, ordinal, answers

    /// Minimum and maximum number of arguments.
    var arity: ClosedRange<Int> {
        switch self {
        case .empty, .allTrue, .anyTrue, .allFalse, .anyFalse, .count, .distinct, .isDistinct, .single, .first,
             .last, .tail, .toBoolean, .convertsToBoolean, .toInteger, .convertsToInteger, .toDecimal,
             .convertsToDecimal, .toString, .convertsToString, .toDate, .convertsToDate, .toDateTime,
             .convertsToDateTime, .toTime, .convertsToTime, .upper, .lower, .length, .toChars, .trim, .abs,
             .ceiling, .exp, .floor, .ln, .sqrt, .truncate, .children, .descendants, .now, .timeOfDay, .today,
             .precision, .not, .yearOf, .monthOf, .dayOf, .hourOf, .minuteOf, .secondOf, .millisecondOf,
             .timezoneOffsetOf, .dateOf, .timeOf, .type, .sum, .min, .max, .avg, .resolve, .hasValue,
             .getValue, .htmlChecks, .weight, .ordinal, .answers:
            return 0...0
        case .exists, .toQuantity, .convertsToQuantity, .round, .join, .lowBoundary, .highBoundary:
            return 0...1
        case .all, .subsetOf, .supersetOf, .where, .select, .repeat, .repeatAll, .ofType, .skip, .take,
             .intersect, .exclude, .union, .indexOf, .lastIndexOf, .startsWith, .endsWith, .contains, .log,
             .power, .comparable, .is, .as, .extension, .conformsTo, .memberOf, .encode, .decode, .escape,
             .unescape, .split:
            return 1...1
        case .combine, .substring, .matches, .matchesFull, .trace, .aggregate:
            return 1...2
        case .iif:
            return 2...3
        case .replace:
            return 2...2
        case .replaceMatches:
            return 2...3
        case .sort:
            return 0...16
        case .coalesce:
            return 1...16
        }
    }

    /// True when the function's arguments are expressions evaluated against each input item, with
    /// `$this` (and `$index`, `$total`) bound, rather than once against the enclosing scope.
    var takesLambda: Bool {
        switch self {
        case .exists, .all, .where, .select, .repeat, .repeatAll, .aggregate, .sort, .trace: true
        default: false
        }
    }

    /// True for `is`, `as` and `ofType`, whose argument is a type specifier rather than an expression.
    var takesTypeSpecifier: Bool { self == .is || self == .as || self == .ofType }
}
