package sim

import "net/http"

type gcAccountRef struct{}
type gcError struct{ Summary, Detail, Type string }
type stripeError struct{ Type, Code, Message string }

func (s *Simulator) routeGoCardless()                                                {}
func (s *Simulator) routeStripe()                                                    {}
func (s *Simulator) routeMercury()                                                   {}
func writeGCError(w http.ResponseWriter, st int, e gcError)                          {}
func writeStripeError(w http.ResponseWriter, r *http.Request, st int, e stripeError) {}
func writeMercuryError(w http.ResponseWriter, st int, m string)                      {}
