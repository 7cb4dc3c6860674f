import Glibc
import Testing
@testable import CVHostPlugins

@Suite("ThreadPlan: the cores divided among a run's instances")
struct ThreadPlanTests {
    @Test("each instance gets its share of the cores, at least one")
    func shares() {
        #expect(ThreadPlan(cores: 8, instances: 2).threadsPerInstance == 4)
        #expect(ThreadPlan(cores: 8, instances: 3).threadsPerInstance == 2)
        #expect(ThreadPlan(cores: 2, instances: 8).threadsPerInstance == 1)
        // Nonsense counts are taken as one.
        #expect(ThreadPlan(cores: 0, instances: 0) == ThreadPlan(cores: 1, instances: 1))
    }

    @Test("the cores this process may use are at least one and no more than the machine's")
    func usableCores() {
        let cores = ThreadPlan.usableCores()
        #expect(cores >= 1)
        #expect(cores <= Int(sysconf(Int32(_SC_NPROCESSORS_CONF))))
    }
}
