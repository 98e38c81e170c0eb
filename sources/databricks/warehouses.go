package databricks

import (
	"context"

	"github.com/databricks/databricks-sdk-go/service/sql"
)

// CallListWarehouses is the SDK method name of the warehouses listing.
const CallListWarehouses = "ListWarehouses"

// Warehouse is one SQL warehouse for the header.
type Warehouse struct {
	ID    string
	Name  string
	State string // RUNNING, STOPPED, STARTING, …
}

// Warehouses lists the SQL warehouses the credentials can see, restricted
// to Config.Warehouses when set.
func (c *Client) Warehouses(ctx context.Context) ([]Warehouse, error) {
	want := map[string]bool{}
	for _, id := range c.conf.Warehouses {
		want[id] = true
	}
	var out []Warehouse
	it := c.warehouses.List(ctx, sql.ListWarehousesRequest{})
	for it.HasNext(ctx) {
		w, err := it.Next(ctx)
		if err != nil {
			return nil, c.wrapErr(CallListWarehouses, err)
		}
		if len(want) > 0 && !want[w.Id] {
			continue
		}
		out = append(out, Warehouse{ID: w.Id, Name: w.Name, State: string(w.State)})
	}
	return out, nil
}
