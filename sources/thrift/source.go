package thrift

import (
	"context"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// The poller's source interfaces (sources.StatusSource, ActionSource and
// IdleCloser), each one attempt. Asserted in source_test.go, since the
// poller package may import this one's users.

// Status is GetOperationStatus.
func (c *Client) Status(ctx context.Context, ref sources.Ref) (sources.Status, error) {
	st, err := c.GetOperationStatus(ctx, ref)
	st.Source = model.StatusViaThrift
	return st, err
}

// Cancel is CancelOperation.
func (c *Client) Cancel(ctx context.Context, ref sources.Ref) error {
	return c.CancelOperation(ctx, ref)
}

// Close is CloseOperation.
func (c *Client) Close(ctx context.Context, ref sources.Ref) error {
	return c.CloseOperation(ctx, ref)
}
