package sim

import "net/http"

type stripeError struct{ Type, Code, Message string }

func (s *Simulator) routeStripe()                                                    {}
func (s *Simulator) routeMercury()                                                   {}
func writeStripeError(w http.ResponseWriter, r *http.Request, st int, e stripeError) {}
func writeMercuryError(w http.ResponseWriter, st int, m string)                      {}
