package cluster

type Option func(g *Gossiper)
