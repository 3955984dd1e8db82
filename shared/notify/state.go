package notify

// State is where a notification stands. The zero value, StateNone, means no record exists.
type State string

// The states of DESIGN.md. Their string values are stored and audited; never rename one.
const (
	StateNone            State = ""
	StateAccepted        State = "accepted"
	StateDispatching     State = "dispatching"
	StateDispatchUnknown State = "dispatch_unknown"
	StateRetryScheduled  State = "retry_scheduled"
	StateSent            State = "sent"
	StateDelivered       State = "delivered"
	StateUndelivered     State = "undelivered"
	StateFailed          State = "failed"
	StateExpired         State = "expired"
	StateCancelled       State = "cancelled"
	// StateRefused is an admission the abuse guard refused after its record was written: the
	// record keeps the refusal (its reason and RetryAt), so a repeat of the key gets the same
	// answer and an auditor sees why it stopped. Nothing is ever sent for it.
	StateRefused State = "refused"
)

// States lists every state a record can be in, in the order of DESIGN.md.
var States = []State{
	StateAccepted, StateDispatching, StateDispatchUnknown, StateRetryScheduled, StateSent,
	StateDelivered, StateUndelivered, StateFailed, StateExpired, StateCancelled, StateRefused,
}

// Terminal reports whether no further transition can start from s. Sent is not terminal
// because a delivery receipt may still move it to delivered or undelivered, but it is final
// for sending: see SendingDone.
func (s State) Terminal() bool {
	switch s {
	case StateDelivered, StateUndelivered, StateFailed, StateExpired, StateCancelled, StateRefused:
		return true
	}
	return false
}

// SendingDone reports whether no send may ever happen again for a record in state s. The sealed
// payload is removed from the record once this is true.
func (s State) SendingDone() bool { return s == StateSent || s.Terminal() }

// Valid reports whether s is one of the known states.
func (s State) Valid() bool {
	for _, k := range States {
		if s == k {
			return true
		}
	}
	return false
}
