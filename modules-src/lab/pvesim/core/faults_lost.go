package core

// FaultLostAnswer lets the request be handled completely (the change is
// made, or refused by the handler, and logged) and then resets the
// connection instead of answering, whatever the answer was (with Delay,
// the request is handled only after that long, as behind a slow hop):
// the "did my create happen?" case a client must answer by re-reading, not
// by sending the request again. Added for pveapi's write-retry tests.
const FaultLostAnswer FaultKind = "lost-answer"
