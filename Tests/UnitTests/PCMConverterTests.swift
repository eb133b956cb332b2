@testable import Audio
import XCTest

final class PCMConverterTests: XCTestCase {
    /// Converts planar samples (one array per channel, all as long) as libFLAC hands them over.
    func convert(_ planes: [[Int32]], bits: Int, volume: Double = 1, into pcm: inout [UInt8]) {
        let format = AudioFormat(sampleRate: 48000, channels: planes.count, bitsPerSample: bits)
        let copies = planes.map { plane in
            let p = UnsafeMutablePointer<Int32>.allocate(capacity: plane.count)
            p.initialize(from: plane, count: plane.count)
            return p
        }
        defer { copies.forEach { $0.deallocate() } }
        let pointers: [UnsafePointer<Int32>?] = copies.map { UnsafePointer($0) }
        pointers.withUnsafeBufferPointer { table in
            let f = DecodedFrame(format: format, samples: planes[0].count, planes: table.baseAddress!)
            PCMConverter().convert(f, volume: volume, into: &pcm)
        }
    }

    func convert(_ planes: [[Int32]], bits: Int, volume: Double = 1) -> [UInt8] {
        var pcm: [UInt8] = []
        convert(planes, bits: bits, volume: volume, into: &pcm)
        return pcm
    }

    func testSixteenBitIsInterleavedLittleEndian() {
        XCTAssertEqual(convert([[1, -2], [0x1234, -32768]], bits: 16),
                       [0x01, 0x00, 0x34, 0x12, 0xFE, 0xFF, 0x00, 0x80])
    }

    /// Anything wider than 16 bits goes out as S32, shifted up to full scale.
    func testTwentyFourBitIsShiftedIntoThirtyTwo() {
        XCTAssertEqual(convert([[0x123456, -1]], bits: 24),
                       [0x00, 0x56, 0x34, 0x12, 0x00, 0xFF, 0xFF, 0xFF])
    }

    func testVolumeScalesInFixedPoint() {
        XCTAssertEqual(convert([[1000, -1000, 32767]], bits: 16, volume: 0.5),
                       [0xF4, 0x01, 0x0C, 0xFE, 0xFF, 0x3F])
        XCTAssertEqual(convert([[1000]], bits: 16, volume: 0), [0, 0])
    }

    /// Out-of-range samples (a corrupt frame) are clamped, not wrapped.
    func testOutOfRangeIsClamped() {
        XCTAssertEqual(convert([[40000, -40000]], bits: 16), [0xFF, 0x7F, 0x00, 0x80])
    }

    func testTheBufferIsReusedWhenTheSizeIsTheSame() {
        var pcm: [UInt8] = []
        convert([[1, 2], [3, 4]], bits: 16, into: &pcm)
        convert([[5, 6], [7, 8]], bits: 16, into: &pcm)
        XCTAssertEqual(pcm, [5, 0, 7, 0, 6, 0, 8, 0])
        convert([[9]], bits: 16, into: &pcm)
        XCTAssertEqual(pcm, [9, 0])
    }
}
