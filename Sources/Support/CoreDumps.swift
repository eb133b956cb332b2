import CSupport
import Glibc

/// Makes this process undumpable (prctl PR_SET_DUMPABLE 0): a crash leaves no core file, which
/// would hold the stream password, and other processes of the user cannot ptrace it or read its
/// memory through /proc. Call first thing, before any secret is read. Returns why it failed.
public func forbidCoreDumps() -> String? {
    let rc = gb_forbid_core_dumps()
    return rc == 0 ? nil : String(cString: strerror(rc))
}
