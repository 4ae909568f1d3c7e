// Command prototrim trims a protobuf descriptor set to the gRPC methods
// named in a list and the messages and enums they reach, so that `make
// protos` generates lnd client stubs for only what Kassa calls. Kept
// messages keep every field, number and name, so the wire protocol of
// what is kept is unchanged; comments stay with what they describe.
//
// Usage: prototrim -keep FILE -in FULL.pb -out TRIMMED.pb
//
// FILE lists one method a line as package.Service/Method ('#' starts a
// comment). The input is protoc's --descriptor_set_out with
// --include_source_info; a listed method that does not exist is an error.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Field numbers of FileDescriptorProto, ServiceDescriptorProto and
// DescriptorProto, which source locations use as paths.
const (
	fileMessage = 4
	fileEnum    = 5
	fileService = 6
	serviceRPC  = 2
)

func main() {
	keepPath := flag.String("keep", "", "file listing the methods to keep")
	in := flag.String("in", "", "descriptor set to trim")
	out := flag.String("out", "", "where to write the trimmed set")
	flag.Parse()
	if err := run(*keepPath, *in, *out); err != nil {
		fmt.Fprintln(os.Stderr, "prototrim:", err)
		os.Exit(1)
	}
}

func run(keepPath, in, out string) error {
	keep, err := readKeep(keepPath)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	if err := trim(&set, keep); err != nil {
		return err
	}
	b, err = proto.MarshalOptions{Deterministic: true}.Marshal(&set)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

func readKeep(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	keep := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			keep[line] = true
		}
	}
	return keep, sc.Err()
}

// trim drops the methods not in keep, services left without one, and the
// top-level messages and enums no kept method reaches.
func trim(set *descriptorpb.FileDescriptorSet, keep map[string]bool) error {
	// Top-level types by full name (".pkg.Name"); a nested type counts as
	// its top-level message.
	type decl struct {
		msg *descriptorpb.DescriptorProto
		pkg string
	}
	top := map[string]decl{}
	for _, f := range set.File {
		for _, m := range f.MessageType {
			top["."+f.GetPackage()+"."+m.GetName()] = decl{m, f.GetPackage()}
		}
		for _, e := range f.EnumType {
			top["."+f.GetPackage()+"."+e.GetName()] = decl{nil, f.GetPackage()}
		}
	}
	topOf := func(name string) string {
		for n := name; n != ""; n = n[:strings.LastIndexByte(n, '.')] {
			if _, ok := top[n]; ok {
				return n
			}
		}
		return name
	}
	reached := map[string]bool{}
	var reach func(name string)
	var reachMsg func(m *descriptorpb.DescriptorProto)
	reach = func(name string) {
		name = topOf(name)
		if reached[name] {
			return
		}
		reached[name] = true
		if d, ok := top[name]; ok && d.msg != nil {
			reachMsg(d.msg)
		}
	}
	reachMsg = func(m *descriptorpb.DescriptorProto) {
		for _, fd := range m.Field {
			if fd.TypeName != nil {
				reach(fd.GetTypeName())
			}
		}
		for _, n := range m.NestedType {
			reachMsg(n)
		}
	}

	// First the methods, in every file, and what they reach (a method of
	// one file may reach the messages of another).
	found := map[string]bool{}
	serviceIdx := make([]map[int]int, len(set.File))
	methodIdx := make([]map[[2]int]int, len(set.File))
	for i, f := range set.File {
		var services []*descriptorpb.ServiceDescriptorProto
		serviceIdx[i], methodIdx[i] = map[int]int{}, map[[2]int]int{}
		for si, s := range f.Service {
			var methods []*descriptorpb.MethodDescriptorProto
			for mi, m := range s.Method {
				name := f.GetPackage() + "." + s.GetName() + "/" + m.GetName()
				if !keep[name] {
					continue
				}
				found[name] = true
				reach(m.GetInputType())
				reach(m.GetOutputType())
				methodIdx[i][[2]int{si, mi}] = len(methods)
				methods = append(methods, m)
			}
			if len(methods) > 0 {
				s.Method = methods
				serviceIdx[i][si] = len(services)
				services = append(services, s)
			}
		}
		f.Service = services
	}

	// Then the types, and the source locations (comments) of what stays.
	for i, f := range set.File {
		msgIdx, enumIdx := map[int]int{}, map[int]int{}
		f.MessageType = filter(f.MessageType, msgIdx, func(m *descriptorpb.DescriptorProto) bool {
			return reached["."+f.GetPackage()+"."+m.GetName()]
		})
		f.EnumType = filter(f.EnumType, enumIdx, func(e *descriptorpb.EnumDescriptorProto) bool {
			return reached["."+f.GetPackage()+"."+e.GetName()]
		})
		if f.SourceCodeInfo == nil {
			continue
		}
		var locs []*descriptorpb.SourceCodeInfo_Location
		for _, l := range f.SourceCodeInfo.Location {
			p := slices.Clone(l.Path)
			ok := true
			if len(p) >= 2 {
				switch p[0] {
				case fileMessage:
					p[1], ok = remap(msgIdx, p[1])
				case fileEnum:
					p[1], ok = remap(enumIdx, p[1])
				case fileService:
					var si int32
					si, ok = remap(serviceIdx[i], p[1])
					if ok && len(p) >= 4 && p[2] == serviceRPC {
						var mi int
						mi, ok = methodIdx[i][[2]int{int(p[1]), int(p[3])}]
						p[3] = int32(mi)
					}
					p[1] = si
				}
			}
			if ok {
				l.Path = p
				locs = append(locs, l)
			}
		}
		f.SourceCodeInfo.Location = locs
	}
	for name := range keep {
		if !found[name] {
			return fmt.Errorf("no method %s", name)
		}
	}
	dropUnusedImports(set)
	return nil
}

// dropUnusedImports drops each file's imports of files whose types it no
// longer uses, so that no stub imports a package that is not generated
// (walletkit.proto imports signer.proto for methods not kept).
func dropUnusedImports(set *descriptorpb.FileDescriptorSet) {
	fileOf := map[string]string{} // package → file
	for _, f := range set.File {
		fileOf[f.GetPackage()] = f.GetName()
	}
	for _, f := range set.File {
		used := map[string]bool{}
		use := func(typeName string) {
			// ".pkg.Type": the longest package that prefixes it.
			best := ""
			for pkg := range fileOf {
				if strings.HasPrefix(typeName, "."+pkg+".") && len(pkg) > len(best) {
					best = pkg
				}
			}
			if best != "" {
				used[fileOf[best]] = true
			}
		}
		var walk func(m *descriptorpb.DescriptorProto)
		walk = func(m *descriptorpb.DescriptorProto) {
			for _, fd := range m.Field {
				if fd.TypeName != nil {
					use(fd.GetTypeName())
				}
			}
			for _, n := range m.NestedType {
				walk(n)
			}
		}
		for _, m := range f.MessageType {
			walk(m)
		}
		for _, s := range f.Service {
			for _, m := range s.Method {
				use(m.GetInputType())
				use(m.GetOutputType())
			}
		}
		if len(f.PublicDependency) > 0 || len(f.WeakDependency) > 0 {
			continue
		}
		f.Dependency = slices.DeleteFunc(f.Dependency, func(d string) bool { return !used[d] })
	}
}

// filter keeps the elements of s that want, recording old index → new.
func filter[T any](s []T, idx map[int]int, want func(T) bool) []T {
	var out []T
	for i, v := range s {
		if want(v) {
			idx[i] = len(out)
			out = append(out, v)
		}
	}
	return out
}

func remap(idx map[int]int, i int32) (int32, bool) {
	j, ok := idx[int(i)]
	return int32(j), ok
}
