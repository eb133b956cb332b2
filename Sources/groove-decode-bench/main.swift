import Audio
@preconcurrency import Glibc

// groove-decode-bench FILE [--ogg]: decodes FILE through groove-bridge's decoder and sample
// conversion (no network, no sound server) and prints what it produced. Run under
// `valgrind --tool=callgrind` by scripts/bench-instructions for a repeatable instruction count.
let args = Array(CommandLine.arguments.dropFirst())
guard let path = args.first, let f = fopen(path, "rb") else {
    fputs("usage: groove-decode-bench FILE.flac|FILE.oga [--ogg]\n", stderr)
    exit(2)
}
var bytes: [UInt8] = []
var buf = [UInt8](repeating: 0, count: 1 << 16)
while true {
    let n = fread(&buf, 1, buf.count, f)
    if n <= 0 { break }
    bytes += buf[0..<n]
}
fclose(f)
guard let r = PCMConverter.Benchmark.run(file: bytes, ogg: args.contains("--ogg")) else {
    fputs("groove-decode-bench: cannot start the decoder\n", stderr)
    exit(1)
}
print("samples \(r.samples) bytes \(r.bytesOut) checksum \(r.checksum)")
