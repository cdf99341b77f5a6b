package telemetry

import "encoding/binary"

// The protobuf wire format, as much of it as the trace messages use.

type fieldNum int32

type wireType uint8

const (
	wireVarint  wireType = 0
	wireFixed64 wireType = 1
	wireBytes   wireType = 2
	wireFixed32 wireType = 5
)

func appendTag(b []byte, n fieldNum, t wireType) []byte {
	return appendVarint(b, uint64(n)<<3|uint64(t))
}

func appendVarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendFixed64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func appendFixed32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }

func appendBytes(b, v []byte) []byte {
	b = appendVarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendStr(b []byte, v string) []byte {
	b = appendVarint(b, uint64(len(v)))
	return append(b, v...)
}

func boolVarint(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}
