import CVHostCore
import CVHostRun
import Testing

/// The exit code of each way a run ends, and which wins when several apply.
@Suite("RunConclusion")
struct RunConclusionTests {
    @Test("a run that ended with results is a success (0)")
    func success() {
        #expect(RunConclusion().failure == nil)
    }

    @Test("each cause gives its own code: input failed 2, no image read 3, quarantined 21, every frame failed 23, nothing found 22")
    func eachCause() {
        var c = RunConclusion()
        c.inputFailed = true
        #expect(c.failure?.code == ExitCodes.runtimeError)
        c = RunConclusion()
        c.unreadImages = "shots/"
        #expect(c.failure?.code == ExitCodes.inputUnavailable)
        #expect(c.failure?.message.hasPrefix("shots/: none of its images could be read") == true)
        c = RunConclusion()
        c.quarantinedPlugin = "face"
        #expect(c.failure?.code == ExitCodes.pluginQuarantined)
        #expect(c.failure?.message.contains("plugin face was quarantined") == true)
        c = RunConclusion()
        c.pluginFailingEveryFrame = ("barcode", "cam")
        #expect(c.failure?.code == ExitCodes.pluginFailedEveryFrame)
        #expect(c.failure?.message.contains("plugin barcode failed on every frame (cam)") == true)
        c = RunConclusion()
        c.anyResult = false
        #expect(c.failure?.code == ExitCodes.nothingFound)
    }

    @Test("the order of the causes: 2 before 3 before 21 before 23 before 22")
    func order() {
        var c = RunConclusion()
        c.anyResult = false
        c.pluginFailingEveryFrame = ("a", "b")
        #expect(c.failure?.code == 23)
        c.quarantinedPlugin = "a"
        #expect(c.failure?.code == 21)
        c.unreadImages = "x"
        #expect(c.failure?.code == 3)
        c.inputFailed = true
        #expect(c.failure?.code == 2)
    }

    @Test("no result: 22 when the inputs ended by themselves (their end, --max-frames) or by --duration; 0 when stopped by a signal, a command, stdout closing or --oneshot",
          arguments: [(StopReason?.none, Int32?(22)), (.duration, 22),
                      (.signal, 0), (.requested, 0), (.outputClosed, 0), (.firstResult, 0)])
    func stopReasons(reason: StopReason?, code: Int32?) {
        var c = RunConclusion()
        c.anyResult = false
        c.stoppedBy = reason
        #expect((c.failure?.code ?? 0) == code)
    }
}
