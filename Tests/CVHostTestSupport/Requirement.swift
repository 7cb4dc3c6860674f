import Foundation

/// Whether a suite that needs something from outside the package (the benchmark corpus, a VM's
/// kernel) runs. On a developer's machine it is skipped, saying why, when the thing is missing;
/// under CI (CI=true) it always runs, so that a missing install step fails the run instead of
/// passing it with the suite silently skipped.
public enum Requirement {
    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// `available`, or true under CI (the suite runs and fails on what is missing).
    public static func met(_ available: Bool) -> Bool { available || isCI }
}
