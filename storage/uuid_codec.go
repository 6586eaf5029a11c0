package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// registerTypes teaches a new connection to read PostgreSQL's uuid into
// uuid.UUID, and to send uuid.UUID, in the binary format directly. pgx
// otherwise goes through the type's database/sql Scanner and Valuer, a
// round trip through text for every id: a fifth of a transfers listing's
// CPU. Arrays of uuid keep pgx's own path.
func registerTypes(_ context.Context, conn *pgx.Conn) error {
	conn.TypeMap().RegisterType(&pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}})
	return nil
}

// uuidCodec is pgx's uuid codec with binary plans for uuid.UUID added;
// every other Go type goes to pgx's own plans.
type uuidCodec struct{ pgtype.UUIDCodec }

// PlanEncode sends a uuid.UUID as its 16 bytes.
func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return encodeUUIDBinary{}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

// PlanScan reads the 16 bytes into a *uuid.UUID (a **uuid.UUID reaches
// it through pgx's pointer-to-pointer plan, NULL giving nil).
func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok && format == pgtype.BinaryFormatCode {
		return scanUUIDBinary{}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type encodeUUIDBinary struct{}

func (encodeUUIDBinary) Encode(value any, buf []byte) ([]byte, error) {
	id := value.(uuid.UUID)
	return append(buf, id[:]...), nil
}

type scanUUIDBinary struct{}

func (scanUUIDBinary) Scan(src []byte, dst any) error {
	if src == nil {
		return errors.New("cannot scan NULL into *uuid.UUID")
	}
	if len(src) != len(uuid.UUID{}) {
		return fmt.Errorf("invalid length for uuid: %d", len(src))
	}
	copy(dst.(*uuid.UUID)[:], src)
	return nil
}
