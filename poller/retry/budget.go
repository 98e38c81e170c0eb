package retry

import "sync"

// budget is the per-workspace retry budget: a token bucket in the spirit
// of the AWS SDK standard retry mode. A retry spends tokens; a success
// refunds the cost of the retry that succeeded, or adds a small amount.
// When it is empty, calls make their first attempt only, so an outage
// costs one call per scheduled poll instead of a retry storm.
//
// Written by hand: golang.org/x/time/rate refills with time, whereas this
// bucket must refill only with successes (time alone must not re-arm
// retries during an outage).
type budget struct {
	mu        sync.Mutex
	tokens    float64
	capacity  float64
	retryCost float64
	timeCost  float64
	refund    float64
}

func newBudget(o PolicyOptions) *budget {
	return &budget{tokens: o.BudgetCapacity, capacity: o.BudgetCapacity,
		retryCost: o.RetryCost, timeCost: o.TimeoutCost, refund: o.SuccessRefund}
}

// take spends the cost of one retry; false when the budget cannot pay.
func (b *budget) take(timeout bool) (float64, bool) {
	cost := b.retryCost
	if timeout {
		cost = b.timeCost
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tokens < cost {
		return 0, false
	}
	b.tokens -= cost
	return cost, true
}

// success credits a successful call; lastCost is what its last retry paid.
func (b *budget) success(lastCost float64) {
	add := b.refund
	if lastCost > 0 {
		add = lastCost
	}
	b.mu.Lock()
	b.tokens = min(b.capacity, b.tokens+add)
	b.mu.Unlock()
}

func (b *budget) available() float64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens
}
