package provider

import "sync"

// keyTable is a bounded map from string keys to small values, used for every
// piece of per-key state (flaky and reset request IDs, partner keys, the log
// per request ID).
//
// Each update is one check-and-set under the lock of the key's shard, so two
// concurrent first requests with one key see counts 1 and 2, never 1 and 1;
// there is no global lock, so different keys rarely contend. Memory is
// bounded: each shard holds at most cap/shards keys and forgets its oldest
// key (first inserted) to make room, so a flood of distinct keys cannot grow
// the table; keys are at most MaxKeyBytes long (the handlers refuse longer
// ones) and every value is bounded too. A forgotten key starts again from
// zero. A table is never emptied in place: Reset drops it whole.
type keyTable[V any] struct {
	shards []keyShard[V]
}

type keyShard[V any] struct {
	mu    sync.Mutex
	m     map[string]*V
	order []string // insertion ring; order[next] is the oldest once full
	next  int
	limit int
}

const maxShards = 16

// newKeyTable returns a table remembering at most limit keys (limit ≥ 1).
func newKeyTable[V any](limit int) *keyTable[V] {
	n := min(maxShards, limit)
	t := &keyTable[V]{shards: make([]keyShard[V], n)}
	for i := range t.shards {
		per := limit / n
		if i < limit%n {
			per++
		}
		t.shards[i].limit = per
		t.shards[i].m = make(map[string]*V)
	}
	return t
}

// shard picks key's shard with FNV-1a (deterministic, no allocation).
func (t *keyTable[V]) shard(key string) *keyShard[V] {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return &t.shards[h%uint32(len(t.shards))]
}

// update runs f on key's value (the zero value if key is new) while holding
// the shard lock. f may keep the pointer to pass to view later.
func (t *keyTable[V]) update(key string, f func(*V)) {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if !ok {
		v = new(V)
		if len(s.order) < s.limit {
			s.order = append(s.order, key)
		} else {
			delete(s.m, s.order[s.next])
			s.order[s.next] = key
			s.next = (s.next + 1) % s.limit
		}
		s.m[key] = v
	}
	f(v)
}

// view runs f on key's value under the shard lock if the table remembers
// key, and reports whether it did. It never adds a key.
func (t *keyTable[V]) view(key string, f func(*V)) bool {
	s := t.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	if ok {
		f(v)
	}
	return ok
}

// get returns a copy of key's value and whether the table remembers it.
func (t *keyTable[V]) get(key string) (V, bool) {
	var out V
	ok := t.view(key, func(v *V) { out = *v })
	return out, ok
}

// len returns the number of remembered keys.
func (t *keyTable[V]) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

// incr adds one to key's count and returns the new count.
func incr(t *keyTable[int64], key string) int64 {
	var n int64
	t.update(key, func(v *int64) { *v++; n = *v })
	return n
}
