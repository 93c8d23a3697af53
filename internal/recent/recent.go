// Package recent keeps the values of the last keys put, a bounded number
// of them: what the event stream shares among its subscribers (the hub's
// decoded payloads, the handlers' encoded frames), since every subscriber
// following live takes the same newest events.
package recent

import "sync"

// Map holds the values of the last n keys put, the oldest going first. A
// key's first value stays: values are shared, never replaced. It is safe
// for concurrent use.
type Map[K comparable, V any] struct {
	mu    sync.Mutex
	byKey map[K]V
	keys  []K // the keys in byKey, a ring whose oldest is at next once full
	next  int
}

// New is an empty Map of at most n keys (at least 1).
func New[K comparable, V any](n int) *Map[K, V] {
	n = max(n, 1)
	return &Map[K, V]{byKey: make(map[K]V, n), keys: make([]K, 0, n)}
}

// Get is the value put for key, and whether there is one.
func (m *Map[K, V]) Get(key K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.byKey[key]
	return v, ok
}

// Put keeps value for key, unless key has one, letting the oldest key go
// when the map is full.
func (m *Map[K, V]) Put(key K, value V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byKey[key]; ok {
		return
	}
	if len(m.keys) < cap(m.keys) {
		m.keys = append(m.keys, key)
	} else {
		delete(m.byKey, m.keys[m.next])
		m.keys[m.next] = key
		m.next = (m.next + 1) % len(m.keys)
	}
	m.byKey[key] = value
}

// Len is how many keys the map holds.
func (m *Map[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.byKey)
}
