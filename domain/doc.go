// Package domain holds the records every layer of finsync shares: users,
// credentials, bank connections, accounts, transactions, categories, rules,
// balances, holdings and investment activity, and the Money type that carries
// every amount without ever passing through float64.
//
// It imports no other finsync package, and every other package may import it.
package domain
