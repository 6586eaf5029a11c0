package storage

// MarkTimeout exposes markTimeout to the external tests.
var MarkTimeout = markTimeout
