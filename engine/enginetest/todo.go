package enginetest

import "testing"

func (s *suite) testBadInput(t *testing.T)   { t.Skip("TODO") }
func (s *suite) testQuarantine(t *testing.T) { t.Skip("TODO") }
func (s *suite) testMigrations(t *testing.T) { t.Skip("TODO") }
func (s *suite) testSnapshot(t *testing.T)   { t.Skip("TODO") }
func (s *suite) testQuery(t *testing.T)      { t.Skip("TODO") }
func (s *suite) testPrune(t *testing.T)      { t.Skip("TODO") }
func (s *suite) testEvents(t *testing.T)     { t.Skip("TODO") }
