package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tabrelay/tabrelay/actors/wire"
)

// TestAMessageANodeDoesNotKnowDoesNotCrashIt sends a node's actor remote
// a protobuf type it has never heard of (protoactor's remote dereferences
// nil on one), then a good request: the node logs the bad message, stays
// up, and still answers.
func TestAMessageANodeDoesNotKnowDoesNotCrashIt(t *testing.T) {
	c := startCluster(t, clusterOptions{nodes: 1})
	n := c.nodes[0]

	file, err := protodesc.NewFile(&descriptorpb.FileDescriptorProto{
		Name: proto.String("unknown.proto"), Package: proto.String("nowhere.v1"), Syntax: proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{{Name: proto.String("Unknown"), Field: []*descriptorpb.FieldDescriptorProto{{
			Name: proto.String("x"), Number: proto.Int32(1), Type: descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
			Label: descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(), JsonName: proto.String("x")}}}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := dynamicpb.NewMessage(file.Messages().ByName("Unknown"))

	system := actor.NewActorSystem()
	r := remote.NewRemote(system, remote.Configure("127.0.0.1", 0))
	r.Start()
	defer r.Shutdown(false)
	activator := actor.NewPID(n.remote, "placement-activator")
	system.Root.Send(activator, bad)

	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(n.current().stderr.String(), "a remote message crashed its reader") {
		if time.Now().After(deadline) {
			t.Fatal("the node did not report the bad message")
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(n.url + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the node is down after a bad message: %v", err)
	}
	resp.Body.Close()
	// Its remote still works: a good request is answered.
	res, err := system.Root.RequestFuture(activator, &wire.Activate{Pairing: "p-after-bad"}, 10*time.Second).Result()
	if a, ok := res.(*wire.Activated); err != nil || !ok || a.GetError() != "" {
		t.Fatalf("a good request after the bad one: %v %v", res, err)
	}
}
