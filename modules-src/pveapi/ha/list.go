package ha

import (
	"context"
	"slices"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// readList reads one of the HA config's lists (resources, groups, rules)
// at path, types each row with typed and sorts the result by cmp: PVE
// answers them in no order the module can rely on.
func readList[Row, T any](ctx context.Context, g pveapi.Getter, path string, typed func(Row) (T, error), cmp func(a, b T) int) ([]T, error) {
	var rows []Row
	if err := g.Get(ctx, path, nil, &rows); err != nil {
		return nil, err
	}
	out := make([]T, 0, len(rows))
	for _, row := range rows {
		t, err := typed(row)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	slices.SortFunc(out, cmp)
	return out, nil
}
