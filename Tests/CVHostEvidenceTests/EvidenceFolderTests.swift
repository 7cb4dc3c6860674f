import CVHostCore
import CVHostTestSupport
import Foundation
import Testing
@testable import CVHostEvidence

/// A folder of evidence within its budget: the oldest of cvhost's own files go first, nothing
/// else is ever deleted, a file half written by a killed run is cleared, another user's folder is refused.
@Suite("Evidence folders and their budget")
struct EvidenceFolderTests {
    static func budget(maxBytes: UInt64, maxAge: Double? = nil) -> EvidenceSettings.Budget {
        EvidenceSettings.Budget(maxBytes: maxBytes, maxAge: maxAge, minFreeBytes: 0)
    }

    @Test("a budget of 5 MB filled with 1 MB files: it stays under 5 MB, the oldest deleted first; a file not cvhost's is untouched")
    func oldestFirst() throws {
        let dir = TestFolders.make("evidence")
        try Data("mine".utf8).write(to: URL(fileURLWithPath: dir + "/notes.txt"))
        let folder = try EvidenceFolder(dir, kind: .clips, role: "the clips folder", setting: "--clips", budget: Self.budget(maxBytes: 5 << 20))
        let file = [UInt8](repeating: 7, count: 1 << 20)
        for i in 0..<12 {
            #expect(folder.makeRoom(for: UInt64(file.count)))
            #expect(folder.write("clip-\(i).mp4", bytes: file) == nil)
            #expect(folder.bytesHeld <= 5 << 20)
        }
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: dir))
        #expect(names == Set(["notes.txt", ".cvhost-evidence"] + (7..<12).map { "clip-\($0).mp4" }), "\(names)")
        #expect(folder.entries.map(\.name) == (7..<12).reversed().map { "clip-\($0).mp4" })
        #expect(folder.deleted == 7)
        // A file larger than the whole budget: no room, nothing more deleted.
        #expect(!folder.makeRoom(for: 6 << 20))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).contains("notes.txt"))
    }

    @Test("the index survives a restart; a file it names that is gone is forgotten; one left half written is deleted; an index edited to name another file deletes nothing else")
    func restart() throws {
        let dir = TestFolders.make("evidence")
        do {
            let folder = try EvidenceFolder(dir, kind: .clips, role: "the clips folder", setting: "--clips", budget: Self.budget(maxBytes: 1 << 30))
            #expect(folder.write("a.jpg", bytes: [1, 2, 3]) == nil)
            #expect(folder.write("b.jpg", bytes: [4, 5]) == nil)
            guard case .success(let fd) = folder.start("c.mp4") else { Issue.record("no partial file"); return }
            close(fd)  // killed while writing c.mp4
        }
        #expect(FileManager.default.fileExists(atPath: dir + "/.partial-c.mp4"))
        try FileManager.default.removeItem(atPath: dir + "/b.jpg")
        // A line naming a file outside the folder, or the index itself: never deleted.
        let index = dir + "/.cvhost-evidence"
        let extra = "../outside\t1\t0\t0\t\t\t\n.cvhost-evidence\t1\t0\t0\t\t\t\n"
        try (String(contentsOfFile: index, encoding: .utf8) + extra).write(toFile: index, atomically: true, encoding: .utf8)
        let again = try EvidenceFolder(dir, kind: .clips, role: "the clips folder", setting: "--clips", budget: Self.budget(maxBytes: 1 << 30, maxAge: 1))
        #expect(again.entries.map(\.name) == ["a.jpg"])
        #expect(!FileManager.default.fileExists(atPath: dir + "/.partial-c.mp4"))
        // Older than max_age: swept.
        #expect(again.sweep(nowNs: HostClock.wallNs() + 5_000_000_000) == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == [".cvhost-evidence"])
    }

    @Test("the index is a journal: a line a change, compacted at twice the files; 3,000 files write about 3 lines each, not the index each time")
    func journal() throws {
        let dir = TestFolders.make("evidence")
        let folder = try EvidenceFolder(dir, kind: .snapshots, role: "the snapshots folder", setting: "--snapshots", budget: Self.budget(maxBytes: 1 << 30))
        var written = 0
        for i in 0..<3000 {
            #expect(folder.write("s-\(i).jpg", bytes: [1]) == nil)
            written += 1
            #expect(folder.indexLines <= max(1024, 2 * written) + 2)
        }
        let index = try String(contentsOfFile: dir + "/.cvhost-evidence", encoding: .utf8)
        #expect(index.hasPrefix("cvhost-evidence\t2\tsnapshots\t\(getpid())\n"))
        #expect(index.split(separator: "\n").count == folder.indexLines)
        #expect(folder.entries.count == 3000)
    }

    @Test("a damaged index costs only its damaged lines: a size of 2^64-1, a cut last line, junk, a 10 KB line; a label of 200 KB kept at 200 characters")
    func damagedIndex() throws {
        let dir = TestFolders.make("evidence")
        do {
            let folder = try EvidenceFolder(dir, kind: .clips, role: "the clips folder", setting: "--clips", budget: Self.budget(maxBytes: 1 << 30))
            #expect(folder.write("a.mp4", bytes: [1, 2, 3], label: String(repeating: "x", count: 200_000)) == nil)
            #expect(folder.write("b.mp4", bytes: [4]) == nil)
            #expect(folder.write("c.mp4", bytes: [5]) == nil)
        }
        let index = dir + "/.cvhost-evidence"
        var text = try String(contentsOfFile: index, encoding: .utf8)
        #expect(text.count < 2000, "the label is bounded in the index")
        text = text.replacingOccurrences(of: "+\tb.mp4\t1\t", with: "+\tb.mp4\t18446744073709551615\t")
        text += "garbage line\n" + String(repeating: "y", count: 10_000) + "\n+\tc.mp4\t99"
        try text.write(toFile: index, atomically: true, encoding: .utf8)
        let again = try EvidenceFolder(dir, kind: .clips, role: "the clips folder", setting: "--clips", budget: Self.budget(maxBytes: 1 << 30))
        // b's line is damaged (a size past any file): b is no longer cvhost's; c's good line stands.
        #expect(again.entries.map(\.name).sorted() == ["a.mp4", "c.mp4"])
        #expect(again.entries.first { $0.name == "a.mp4" }?.label.count == EvidenceFolder.maxField)
        #expect(again.bytesHeld == 4)
        #expect(again.makeRoom(for: 1 << 20))
    }

    @Test("a FIFO under the index's name or a file's: the start does not wait on it, and the file is not served")
    func fifo() throws {
        let dir = TestFolders.make("evidence")
        do {
            let folder = try EvidenceFolder(dir, kind: .snapshots, role: "the snapshots folder", setting: "--snapshots", budget: Self.budget(maxBytes: 1 << 30))
            #expect(folder.write("a.jpg", bytes: [1]) == nil)
        }
        try FileManager.default.removeItem(atPath: dir + "/a.jpg")
        #expect(mkfifo(dir + "/a.jpg", 0o600) == 0)
        do {
            let folder = try EvidenceFolder(dir, kind: .snapshots, role: "the snapshots folder", setting: "--snapshots", budget: Self.budget(maxBytes: 1 << 30))
            #expect(folder.open("a.jpg") == nil)
        }
        try FileManager.default.removeItem(atPath: dir + "/.cvhost-evidence")
        #expect(mkfifo(dir + "/.cvhost-evidence", 0o600) == 0)
        let folder = try EvidenceFolder(dir, kind: .snapshots, role: "the snapshots folder", setting: "--snapshots", budget: Self.budget(maxBytes: 1 << 30))
        #expect(folder.entries.isEmpty)
        var st = stat()
        #expect(lstat(dir + "/.cvhost-evidence", &st) == 0 && st.st_mode & S_IFMT == S_IFREG, "written anew as a file")
    }

    @Test("one run a folder: a second holder is refused, naming this run; a folder of clips is not taken for snapshots")
    func heldAndKind() throws {
        let dir = TestFolders.make("evidence")
        let first = try EvidenceFolder(dir, kind: .clips, role: "the clips folder", setting: "--clips", budget: Self.budget(maxBytes: 1 << 30))
        #expect {
            _ = try EvidenceFolder(dir, kind: .snapshots, role: "the snapshots folder", setting: "--snapshots", budget: Self.budget(maxBytes: 1 << 30))
        } throws: { "\($0)".contains("the snapshots folder \(dir) is in use (this run names it already)") && "\($0)".contains("a folder of its own") }
        _ = first
        withExtendedLifetime(first) {}
        let other = TestFolders.make("evidence")
        do { _ = try EvidenceFolder(other, kind: .clips, role: "the clips folder", setting: "--clips", budget: Self.budget(maxBytes: 1 << 30)) }
        #expect {
            _ = try EvidenceFolder(other, kind: .snapshots, role: "the snapshots folder", setting: "--snapshots", budget: Self.budget(maxBytes: 1 << 30))
        } throws: { "\($0)".contains("the snapshots folder \(other) holds clips (its index says so)") }
    }

    @Test("a folder every user can write is refused, naming it and the fix")
    func untrusted() throws {
        let dir = TestFolders.make("evidence")
        chmod(dir, 0o777)
        #expect {
            _ = try EvidenceFolder(dir, kind: .snapshots, role: "the snapshots folder", setting: "--snapshots", budget: Self.budget(maxBytes: 1 << 20))
        } throws: { "\($0)".contains("the snapshots folder \(dir) can be written by every user") && "\($0)".contains("--snapshots") }
    }
}

@Suite("--snapshots and --clips settings")
struct EvidenceSettingsTests {
    func refusal(_ text: String, _ kind: EvidenceSettings.Kind) -> String {
        do { _ = try EvidenceSettings(parsing: text, kind: kind); return "" } catch { return error.description }
    }

    @Test("defaults, and every option read")
    func read() throws {
        let c = try EvidenceSettings(parsing: "/var/lib/cvhost/clips:on=line.crossed+zone.entered,pre=3,post=8,max=60,max_gb=2,max_age=12h,min_free_gb=0.5",
                                     kind: .clips)
        #expect(c.folder == "/var/lib/cvhost/clips" && c.on == ["line.crossed", "zone.entered"] && c.pre == 3 && c.post == 8 && c.maxSeconds == 60)
        #expect(c.budget.maxBytes == 2 << 30 && c.budget.maxAge == 12 * 3600 && c.budget.minFreeBytes == 512 << 20)
        let s = try EvidenceSettings(parsing: "snaps:crop=true,margin=0.5,max_age=none", kind: .snapshots)
        #expect(s.on == nil && s.crop && s.margin == 0.5 && s.budget.maxAge == nil && s.budget.maxBytes == 1 << 30)
    }

    @Test("refusals, one line each naming the setting: no folder, an unknown event (with a guess), an unknown option, absurd seconds, pre + post past max")
    func refusals() {
        #expect(refusal("", .clips).contains("--clips needs a folder"))
        #expect(refusal("d:on=line.crosed", .clips).contains("no event 'line.crosed' (did you mean line.crossed?)"))
        #expect(refusal("d:crop=true", .clips).contains("no option 'crop' (on, pre, post, max"))
        #expect(refusal("d:pre=-1", .clips).contains("pre is a number from 0 to 60, not '-1'"))
        #expect(refusal("d:post=1e9", .clips).contains("post is a number from 0 to 600"))
        #expect(refusal("d:pre=30,post=100,max=60", .clips).contains("pre + post (130 s) is longer than max (60 s)"))
        #expect(refusal("d:max_age=soon", .snapshots).contains("max_age is a time such as 7d"))
        #expect(refusal("d:pre=1,pre=2", .clips).contains("pre is given twice"))
        #expect(refusal("d:margin=2,crop=maybe", .snapshots).contains("crop is true or false"))
    }
}
