// Package pgcodec registers the pgx codecs the worker's connections use to read and send
// what it handles per job without detours:
//
//   - github.com/google/uuid.UUID as the 16 bytes it is. Without it pgx goes through
//     driver.Valuer and sql.Scanner: a string per uuid, formatted and parsed again, plus
//     an encode plan tried and failed per array element: a large share of the worker's
//     CPU at a high rate.
//   - jsonb into json.RawMessage as a copy of the bytes. pgx otherwise hands a
//     json.RawMessage to json.Unmarshal, which parses every payload only to copy it.
//     jsonb from PostgreSQL is valid JSON.
package pgcodec

import (
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// Register makes m encode and scan uuid.UUID (and slices and pointers of it) in binary,
// and scan jsonb into json.RawMessage without parsing it. It is idempotent and cheap once
// done, so it can run on every acquired connection.
func Register(m *pgtype.Map) {
	if t, ok := m.TypeForOID(pgtype.UUIDOID); ok {
		if _, done := t.Codec.(codec); done {
			return
		}
	}
	t := &pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: codec{}}
	m.RegisterType(t)
	m.RegisterType(&pgtype.Type{Name: "_uuid", OID: pgtype.UUIDArrayOID, Codec: &pgtype.ArrayCodec{ElementType: t}})
	j := &pgtype.Type{Name: "jsonb", OID: pgtype.JSONBOID, Codec: &pgtype.JSONBCodec{Marshal: json.Marshal, Unmarshal: unmarshal}}
	m.RegisterType(j)
	m.RegisterType(&pgtype.Type{Name: "_jsonb", OID: pgtype.JSONBArrayOID, Codec: &pgtype.ArrayCodec{ElementType: j}})
	// A query sent without describing its parameters first (pgx.QueryExecModeExec,
	// through a transaction pooler) finds their types by the Go value alone.
	m.RegisterDefaultPgType(uuid.UUID{}, "uuid")
	m.RegisterDefaultPgType([]uuid.UUID{}, "_uuid")
}

// unmarshal is json.Unmarshal, except that a json.RawMessage gets a copy of the bytes.
func unmarshal(data []byte, v any) error {
	if raw, ok := v.(*json.RawMessage); ok {
		*raw = append(json.RawMessage(nil), data...) // data is pgx's read buffer
		return nil
	}
	return json.Unmarshal(data, v)
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
