import CSupport
import Glibc

/// Makes this process undumpable (prctl PR_SET_DUMPABLE 0): a crash leaves no core file, which
/// would hold the stream password, and other processes of the user cannot ptrace it or read its
/// memory through /proc. Call first thing, before any secret is read. Returns why it failed.
public func forbidCoreDumps() -> String? {
    let rc = gb_forbid_core_dumps()
    return rc == 0 ? nil : String(cString: strerror(rc))
}

/// Makes every block of 128 KiB or more a mapping of its own, unmapped when freed. glibc's
/// default raises that threshold to the largest block freed so far (up to 32 MiB), after which
/// a server's large replies are carved from the heaps of the threads that parse them and kept
/// there: the process grows to its peak and stays there. Call once, at start.
public func returnLargeBlocksToTheSystem() {
    gb_malloc_map_blocks_from(128 << 10)
}
