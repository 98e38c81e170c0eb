package model

import "slices"

// WorkspaceStatus is one watched workspace in a multi-workspace snapshot:
// whether dbxtop can observe it, and what it holds.
type WorkspaceStatus struct {
	Name       string      `json:"name"` // the context name
	Host       string      `json:"host"`
	Warehouses []string    `json:"warehouses"`
	Up         bool        `json:"up"` // its last discovery succeeded
	Operations int         `json:"operations"`
	Flagged    int         `json:"flagged"`
	Endpoints  int         `json:"endpoints"`
	Errors     []ErrorInfo `json:"errors"`
}

// NamedSnapshot is one workspace's snapshot with the name it is watched
// under and whether its last discovery succeeded.
type NamedSnapshot struct {
	Name string
	Up   bool
	Snapshot
}

// Merge combines the snapshots of several watched workspaces into one:
// every operation, endpoint and error carries its workspace's name, the
// rows are ordered as NewSnapshot orders them, and Workspaces says which
// workspace is up. A workspace that is down contributes its error and
// whatever it still follows; it never hides the others. GeneratedAt is
// the latest of the parts'. Clients are left to the caller, who knows the
// window (AggregateClients over the merged operations: one driver
// orphaning statements across a fleet is one row).
func Merge(parts []NamedSnapshot) Snapshot {
	var out Snapshot
	for _, p := range parts {
		if p.GeneratedAt.After(out.GeneratedAt) {
			out.GeneratedAt = p.GeneratedAt
		}
		st := WorkspaceStatus{Name: p.Name, Host: p.Workspace.Host, Up: p.Up,
			Warehouses: nonNil(slices.Clone(p.Workspace.Warehouses)),
			Operations: len(p.Operations), Endpoints: len(p.Endpoints), Errors: []ErrorInfo{}}
		for _, o := range p.Operations {
			if o.Workspace != p.Name { // views and operations are shared: copy both to name the workspace
				c, op := *o, *o.Operation
				op.Workspace = p.Name
				c.Operation = &op
				o = &c
			}
			if len(o.Flags) > 0 {
				st.Flagged++
			}
			out.Operations = append(out.Operations, o)
		}
		for _, e := range p.Endpoints {
			e.Workspace = p.Name
			out.Endpoints = append(out.Endpoints, e)
		}
		for _, e := range p.Errors {
			e.Workspace = p.Name
			out.Errors = append(out.Errors, e)
			st.Errors = append(st.Errors, e)
		}
		out.Workspaces = append(out.Workspaces, st)
	}
	if len(parts) == 1 {
		out.Workspace = parts[0].Workspace
	} else {
		for _, p := range parts {
			out.Workspace.Warehouses = append(out.Workspace.Warehouses, p.Workspace.Warehouses...)
			out.Workspace.NotFollowed += p.Workspace.NotFollowed
		}
		out.Workspace.Listing = mergeListings(parts)
	}
	out.order()
	slices.SortStableFunc(out.Endpoints, func(a, b EndpointView) int {
		if a.Workspace != b.Workspace {
			if a.Workspace < b.Workspace {
				return -1
			}
			return 1
		}
		return 0
	})
	return out
}

// mergeListings adds up the parts' warehouse listings, as of the oldest;
// nil unless every part has one (an unlisted workspace may hold any
// number of warehouses).
func mergeListings(parts []NamedSnapshot) *WarehouseListing {
	var sum WarehouseListing
	for i, p := range parts {
		l := p.Workspace.Listing
		if l == nil {
			return nil
		}
		if i == 0 || l.At.Before(sum.At) {
			sum.At = l.At
		}
		sum.Visible += l.Visible
		sum.Matched += l.Matched
		sum.Warehouses = append(sum.Warehouses, l.Warehouses...)
	}
	return &sum
}
