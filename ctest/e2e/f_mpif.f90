! Fortran with include 'mpif.h' (2 ranks): MPI_SEND / MPI_RECV (with MPI_STATUS_IGNORE and a
! receive buffer larger than the message), MPI_ISEND / MPI_IRECV completed by MPI_WAITALL with
! MPI_STATUSES_IGNORE, MPI_BCAST, MPI_ALLREDUCE with MPI_IN_PLACE, MPI_REDUCE with MPI_IN_PLACE
! at the root, MPI_PCONTROL(0/1) around an unrecorded MPI_BARRIER, and MPI_BARRIER. Recorded
! under the C names.
program f_mpif
  use invmw_expect
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, nprocs, peer, i, reqs(4)
  double precision :: a(200), b(200)
  integer :: iv(10), status(MPI_STATUS_SIZE)

  call MPI_INIT(ierr)
  call ex_call('MPI_Init', 0, 0)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  if (nprocs /= 2) stop 2
  peer = 1 - rank
  a = rank + 1

  ! 4 messages of 50 doubles 0 -> 1, received into room for 200.
  do i = 1, 4
    if (rank == 0) then
      call MPI_SEND(a, 50, MPI_DOUBLE_PRECISION, 1, i, MPI_COMM_WORLD, ierr)
      call ex_call('MPI_Send', 50*8, 0)
    else
      call MPI_RECV(b, 200, MPI_DOUBLE_PRECISION, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call ex_call('MPI_Recv', 0, 50*8)
    end if
  end do
  ! One receive with a real status, ANY_SOURCE: 3 integers 1 -> 0.
  if (rank == 1) then
    call MPI_SEND(iv, 3, MPI_INTEGER, 0, 9, MPI_COMM_WORLD, ierr)
    call ex_call('MPI_Send', 3*4, 0)
  else
    call MPI_RECV(iv, 10, MPI_INTEGER, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, status, ierr)
    call ex_call('MPI_Recv', 0, 3*4)
    if (status(MPI_SOURCE) /= 1) stop 3
  end if

  ! Nonblocking exchange: 2 receives (room for 100) and 2 sends of 30 + 10*i doubles.
  do i = 1, 2
    call MPI_IRECV(b(1 + 100*(i - 1)), 100, MPI_DOUBLE_PRECISION, peer, 20 + i, MPI_COMM_WORLD, &
                   reqs(i), ierr)
    call ex_call('MPI_Irecv', 0, (30 + 10*i)*8)
  end do
  do i = 1, 2
    call MPI_ISEND(a, 30 + 10*i, MPI_DOUBLE_PRECISION, peer, 20 + i, MPI_COMM_WORLD, &
                   reqs(2 + i), ierr)
    call ex_call('MPI_Isend', (30 + 10*i)*8, 0)
  end do
  call MPI_WAITALL(4, reqs, MPI_STATUSES_IGNORE, ierr)
  call ex_call('MPI_Waitall', 0, 0)
  if (b(1) /= peer + 1) stop 4

  call MPI_BCAST(a, 12, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call ex_call('MPI_Bcast', 12*8, 0)
  else
    call ex_call('MPI_Bcast', 0, 12*8)
  end if
  iv = rank + 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, iv, 10, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call ex_call('MPI_Allreduce', 0, 10*4)
  if (iv(10) /= 3) stop 5
  if (rank == 0) then
    call MPI_REDUCE(MPI_IN_PLACE, iv, 5, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
    call ex_call('MPI_Reduce', 0, 5*4)
  else
    call MPI_REDUCE(iv, iv, 5, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
    call ex_call('MPI_Reduce', 5*4, 0)
  end if
  ! MPI_PCONTROL from Fortran: the barrier in between is not recorded.
  call MPI_PCONTROL(0, ierr)
  call ex_call('MPI_Pcontrol', 0, 0)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_PCONTROL(1, ierr)
  call ex_call('MPI_Pcontrol', 0, 0)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call ex_call('MPI_Barrier', 0, 0)

  call ex_call('MPI_Finalize', 0, 0)
  call ex_write(rank)
  if (rank == 0) print '(a,i0)', 'f_mpif: ok ', iv(1)
  call MPI_FINALIZE(ierr)
end program f_mpif
