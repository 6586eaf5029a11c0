package sim

import "net/http"

func (s *Simulator) routeMercury()                              {}
func writeMercuryError(w http.ResponseWriter, st int, m string) {}
