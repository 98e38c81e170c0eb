package databricks

import (
	"context"
	"net/http"
	"net/url"

	"github.com/databricks/databricks-sdk-go/service/sql"

	"github.com/dbxtop/dbxtop/model"
	"github.com/dbxtop/dbxtop/sources"
)

// SDK method names of the Statement Execution calls (the simulator's
// fault names and the poller's Call.Name).
const (
	CallGetStatement    = "GetStatement"
	CallCancelExecution = "CancelExecution"
	CallCloseStatement  = "CloseStatement"
)

// Status reads one statement through the Statement Execution API
// (GET /api/2.0/sql/statements/{id}). The API does not report the owning
// client's activity, so ClientLastActivity stays nil ("?" in the TUI, no
// INACTIVE flag). Open is derived from the state where the state tells it
// (see statusFrom).
// 404 / RESOURCE_DOES_NOT_EXIST → "cannot tell" (unknownStatement).
func (c *Client) Status(ctx context.Context, ref sources.Ref) (sources.Status, error) {
	resp, err := c.statements.GetStatement(ctx, sql.GetStatementRequest{StatementId: ref.StatementID})
	if err != nil {
		err = c.wrapErr(CallGetStatement, err)
		if he, gone := isGone(err); gone {
			return sources.Status{}, unknownStatement(he)
		}
		return sources.Status{}, err
	}
	return statusFrom(resp), nil
}

func statusFrom(resp *sql.StatementResponse) sources.Status {
	st := sources.Status{Source: model.StatusViaStatementAPI}
	st.State = model.StateUnknown
	if resp == nil || resp.Status == nil {
		return st
	}
	st.State = model.FromSEA(string(resp.Status.State))
	if resp.Status.Error != nil {
		st.ErrorMessage = resp.Status.Error.Message
	}
	// Only some states tell whether the server still holds the statement:
	// live ones and SUCCEEDED (results kept until closed) are open, CLOSED
	// is not. A FAILED or CANCELED statement reads the same before and
	// after a close, so Open stays unknown rather than guessed.
	var open bool
	switch resp.Status.State {
	case sql.StatementStatePending, sql.StatementStateRunning, sql.StatementStateSucceeded:
		open = true
	case sql.StatementStateClosed:
		open = false
	default:
		return st
	}
	st.Open = &open
	return st
}

// Cancel asks the server to stop a statement (POST …/{id}/cancel). The
// answer is empty; cancellation is asynchronous. A 404 is "cannot tell"
// (unknownStatement).
func (c *Client) Cancel(ctx context.Context, ref sources.Ref) error {
	err := c.statements.CancelExecution(ctx, sql.CancelExecutionRequest{StatementId: ref.StatementID})
	if err != nil {
		err = c.wrapErr(CallCancelExecution, err)
		if he, gone := isGone(err); gone {
			return unknownStatement(he)
		}
	}
	return err
}

// Close releases a statement (DELETE /api/2.0/sql/statements/{id}, what the
// JDBC SEA client sends; the SDK has no method for it, so it goes through
// the same authenticated, non-retrying client). A statement the server no
// does not know is "cannot tell" (unknownStatement), not a close that is
// done: the API may know only statements run through it.
func (c *Client) Close(ctx context.Context, ref sources.Ref) error {
	path := "/api/2.0/sql/statements/" + url.PathEscape(ref.StatementID)
	headers := map[string]string{"Accept": "application/json"}
	err := c.dc.Do(ctx, http.MethodDelete, path, headers, nil, nil, nil)
	if err != nil {
		err = c.wrapErr(CallCloseStatement, err)
		if he, gone := isGone(err); gone {
			return unknownStatement(he)
		}
	}
	return err
}

// ActionCalls names the Statement Execution API's calls (sources.ActionNamer).
func (c *Client) ActionCalls(sources.Ref) (cancel, close string) {
	return CallCancelExecution, CallCloseStatement
}
