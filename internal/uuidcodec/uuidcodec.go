// Package uuidcodec lets pgx send and read github.com/google/uuid.UUID values as the 16
// bytes they are. Without it pgx goes through driver.Valuer and sql.Scanner: a string
// per uuid, formatted and parsed again, plus an encode plan tried and failed per array
// element. That was a fifth of the worker's CPU at 20k jobs/s (bench/RESULTS.md).
package uuidcodec

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// Register makes m encode and scan uuid.UUID (and slices and pointers of it) in binary.
// It is idempotent and cheap once done, so it can run on every acquired connection.
func Register(m *pgtype.Map) {
	if t, ok := m.TypeForOID(pgtype.UUIDOID); ok {
		if _, done := t.Codec.(codec); done {
			return
		}
	}
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: codec{}}
	m.RegisterType(t)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
}

// codec is pgx's UUIDCodec plus binary plans for uuid.UUID; every other value goes to
// UUIDCodec unchanged.
type codec struct{ pgtype.UUIDCodec }

func (c codec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return encodeBinary{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

func (c codec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return scanBinary{}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type encodeBinary struct{}

func (encodeBinary) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(uuid.UUID)
	return append(buf, u[:]...), nil
}

type scanBinary struct{}

func (scanBinary) Scan(src []byte, dst any) error {
	if src == nil {
		return fmt.Errorf("cannot scan NULL into %T", dst)
	}
	if len(src) != 16 {
		return fmt.Errorf("invalid length for uuid: %d", len(src))
	}
	copy(dst.(*uuid.UUID)[:], src)
	return nil
}
