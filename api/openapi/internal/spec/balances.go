package spec

// v2BalanceDerived is the balance history entry's derived flag, a finsync
// addition to the v2 contract.
func v2BalanceDerived() Obj {
	return describe(boolean(), "finsync addition. true: the balance was not reported but derived backwards "+
		"from the account's earliest recorded balance and the posted transactions between (pending ones do "+
		"not count), exact to the cent, as the end-of-day balance; for credit and loan accounts, the amount "+
		"owed. Derived days run from the day of the account's first stored transaction to the day before its "+
		"first recorded balance, and are re-derived when a sync brings older transactions; a recorded day "+
		"(false) is never replaced by a derived one.")
}
