package databricks

import (
	"context"

	"github.com/databricks/databricks-sdk-go/service/sql"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// CallListWarehouses is the SDK method name of the warehouses listing.
const CallListWarehouses = "ListWarehouses"

// Warehouse is one SQL warehouse for the header and the warehouse gate.
type Warehouse struct {
	ID    string
	Name  string
	State string // RUNNING, STOPPED, STARTING, …
	// For the Warehouses view: the size and cluster counts as listed
	// (nil: not in the answer).
	Size                               string
	Clusters, MinClusters, MaxClusters *int
}

// Warehouses lists the SQL warehouses the credentials can see (every page,
// each request through retry, within the page cap), restricted to
// Config.Warehouses when set.
func (c *Client) Warehouses(ctx context.Context, retry sources.Retry) ([]Warehouse, error) {
	ws, _, _, err := c.listWarehouses(ctx, retry)
	return ws, err
}

// listWarehouses is Warehouses, also counting every warehouse listed
// before the selection and naming the first sources.MaxListedIDs of them.
func (c *Client) listWarehouses(ctx context.Context, retry sources.Retry) (_ []Warehouse, seen int, listed []string, _ error) {
	if retry == nil {
		retry = sources.Once
	}
	want := map[string]bool{}
	for _, id := range c.conf.Warehouses {
		want[id] = true
	}
	var out []Warehouse
	pager := sources.Pager{Call: CallListWarehouses, What: "warehouses", MaxPages: c.conf.MaxPages, Now: c.now}
	req := sql.ListWarehousesRequest{}
	for {
		var resp sql.ListWarehousesResponse
		err := retry(ctx, CallListWarehouses, func(ctx context.Context) error {
			resp = sql.ListWarehousesResponse{}
			return c.wrapErr(CallListWarehouses, c.getJSON(ctx, "/api/2.0/sql/warehouses", req, &resp))
		})
		if err != nil {
			return nil, seen, nil, err // a partial list would close the gate on warehouses it missed
		}
		for _, w := range resp.Warehouses {
			seen++
			if len(listed) < sources.MaxListedIDs {
				listed = append(listed, w.Id)
			}
			if len(want) > 0 && !want[w.Id] {
				continue
			}
			out = append(out, Warehouse{ID: w.Id, Name: w.Name, State: string(w.State), Size: w.ClusterSize,
				Clusters:    listedCount(w.NumClusters, w.State == sql.StateStopped),
				MinClusters: listedCount(w.MinNumClusters, false), MaxClusters: listedCount(w.MaxNumClusters, false)})
		}
		more, trunc := pager.Next(resp.NextPageToken, seen)
		if trunc != nil {
			return nil, seen, nil, trunc
		}
		if !more {
			return out, seen, listed, nil
		}
		req.PageToken = resp.NextPageToken
	}
}

// Gate is the client's warehouse gate, refreshed by every Discover: ask it
// before any warehouse-level (Thrift) call.
func (c *Client) Gate() *sources.WarehouseGate { return c.gate }

// RefreshGate lists the warehouses and feeds the gate (Discover does it
// every round; the proxy calls it on its own ticker). A failure is
// recorded in the gate (which closes once its states are too old) and
// returned for the round's report.
//
// A selection (Config.Warehouses) that matches none of the listed
// warehouses is a *sources.NoMatchError after the gate is fed: the
// listing itself succeeded.
func (c *Client) RefreshGate(ctx context.Context, retry sources.Retry) error {
	ws, seen, listed, err := c.listWarehouses(ctx, retry)
	if err != nil {
		c.gate.Failed(err)
		return err
	}
	infos := make([]model.WarehouseInfo, 0, len(ws))
	for _, w := range ws {
		infos = append(infos, model.WarehouseInfo{ID: w.ID, Name: w.Name, State: w.State, Size: w.Size,
			Clusters: w.Clusters, MinClusters: w.MinClusters, MaxClusters: w.MaxClusters})
	}
	c.gate.ListedInfo(infos, seen)
	if len(c.conf.Warehouses) > 0 && len(ws) == 0 {
		return &sources.NoMatchError{Call: CallListWarehouses, Given: append([]string(nil), c.conf.Warehouses...), Visible: seen, Listed: listed}
	}
	return nil
}

// WarehouseListing is the gate's last listing (sources.WarehouseLister):
// how many warehouses these credentials see, how many the selection keeps.
func (c *Client) WarehouseListing() (model.WarehouseListing, bool) {
	return c.gate.WarehouseListing()
}

// getJSON is one GET through the SDK client (auth, User-Agent, error
// bodies), for the listings whose SDK iterator would follow page tokens
// on its own, without the page cap and the repeated-token check.
func (c *Client) getJSON(ctx context.Context, path string, req, resp any) error {
	headers := map[string]string{"Accept": "application/json"}
	if c.sdk.WorkspaceID != "" {
		headers["X-Databricks-Workspace-Id"] = c.sdk.WorkspaceID
	}
	return c.dc.Do(ctx, "GET", path, headers, map[string]any{}, req, resp)
}

// listedCount is a cluster count of the listing, nil when the answer
// cannot have meant it: a count the JSON left out decodes as 0, and no
// warehouse has a minimum or maximum of 0 clusters, nor a running one 0
// clusters (a stopped one has 0).
func listedCount(n int, zeroMeant bool) *int {
	if n == 0 && !zeroMeant {
		return nil
	}
	return &n
}
